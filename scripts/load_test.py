"""Bounded loopback load test of the search API: N concurrent clients for T seconds.

    .venv/bin/python scripts/load_test.py --base http://127.0.0.1:8000 --clients 4 --seconds 20

Each client loops: GET /api/v1/search?q=<query from a word list> and
GET /api/v1/figures/<random indexed figure>/similar. Prints JSON: requests, errors and
p50/p90/p99/max latency (ms) per endpoint, plus throughput. Only talks to the given base URL
(refuses non-loopback hosts unless --allow-remote) and stops after --seconds.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from urllib.parse import urlparse

import httpx

WORDS = ("accuracy attention heatmap architecture loss training curve recall precision embedding "
         "click through rate ranking model user item graph transformer encoder baseline dataset "
         "performance comparison ablation convergence distribution error temperature detection "
         "segmentation retrieval recommendation matrix factorization latency throughput").split()


def percentile(xs: list[float], p: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def queries(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.sample(WORDS, rng.choice((1, 2, 2, 3)))) for _ in range(n)]


async def figure_ids(client: httpx.AsyncClient, limit: int = 2000) -> list[int]:
    """Figure ids that the index knows (a search per word collects them)."""
    ids: set[int] = set()
    for w in WORDS:
        r = await client.get("/api/v1/search", params={"q": w, "k": 100, "rerank": "false"})
        r.raise_for_status()
        ids.update(h["figure_id"] for h in r.json()["items"])
        if len(ids) >= limit:
            break
    return sorted(ids)


async def run(args) -> dict:
    limits = httpx.Limits(max_connections=args.clients * 2, max_keepalive_connections=args.clients * 2)
    async with httpx.AsyncClient(base_url=args.base, timeout=args.timeout, limits=limits) as client:
        ids = await figure_ids(client)
        if not ids:
            raise SystemExit("the server has no indexed figures")
        qs = queries(500, args.seed)
        lat: dict[str, list[float]] = {"search": [], "similar": []}
        errors: dict[str, int] = {"search": 0, "similar": 0}
        samples: dict[str, str] = {}
        # warm-up: first queries load caches; not measured
        for q in qs[:5]:
            await client.get("/api/v1/search", params={"q": q, "k": args.k})
        deadline = time.perf_counter() + args.seconds

        async def one(kind: str, url: str, params: dict) -> None:
            t0 = time.perf_counter()
            try:
                r = await client.get(url, params=params)
                ok = r.status_code == 200
                if not ok:
                    samples.setdefault(kind, f"HTTP {r.status_code}: {r.text[:200]}")
            except httpx.HTTPError as exc:
                ok = False
                samples.setdefault(kind, f"{type(exc).__name__}: {exc}")
            dt = (time.perf_counter() - t0) * 1000
            if ok:
                lat[kind].append(dt)
            else:
                errors[kind] += 1

        async def worker(i: int) -> None:
            rng = random.Random(args.seed + i)
            while time.perf_counter() < deadline:
                params = {"q": rng.choice(qs), "k": args.k}
                if args.no_rerank:
                    params["rerank"] = "false"
                await one("search", "/api/v1/search", params)
                if time.perf_counter() >= deadline:
                    break
                await one("similar", f"/api/v1/figures/{rng.choice(ids)}/similar", {"k": args.k})

        t0 = time.perf_counter()
        await asyncio.gather(*(worker(i) for i in range(args.clients)))
        wall = time.perf_counter() - t0

    out = {"base": args.base, "clients": args.clients, "seconds": round(wall, 2), "k": args.k,
           "rerank": not args.no_rerank,
           "indexed_figures_sampled": len(ids), "endpoints": {}}
    for kind, xs in lat.items():
        out["endpoints"][kind] = {
            "requests": len(xs) + errors[kind], "errors": errors[kind],
            "p50_ms": round(percentile(xs, 50), 2), "p90_ms": round(percentile(xs, 90), 2),
            "p99_ms": round(percentile(xs, 99), 2), "max_ms": round(max(xs), 2) if xs else None,
            "mean_ms": round(statistics.fmean(xs), 2) if xs else None,
            "rps": round(len(xs) / wall, 1)}
        if kind in samples:
            out["endpoints"][kind]["first_error"] = samples[kind]
    out["errors"] = sum(errors.values())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default="http://127.0.0.1:8000")
    ap.add_argument("--clients", type=int, default=4, help="concurrent clients (1-64)")
    ap.add_argument("--seconds", type=float, default=20.0, help="duration (at most 600)")
    ap.add_argument("--k", type=int, default=12, help="results per request")
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-rerank", action="store_true", help="search with rerank=false (lexical only)")
    ap.add_argument("--allow-remote", action="store_true", help="allow a non-loopback host")
    args = ap.parse_args(argv)
    host = urlparse(args.base).hostname or ""
    if host not in ("127.0.0.1", "localhost", "::1") and not args.allow_remote:
        print(f"refusing to load-test non-loopback host {host!r} (use --allow-remote)", file=sys.stderr)
        return 2
    if not 1 <= args.clients <= 64 or not 0 < args.seconds <= 600:
        print("--clients must be 1-64 and --seconds in (0, 600]", file=sys.stderr)
        return 2
    result = asyncio.run(run(args))
    print(json.dumps(result, indent=2))
    return 1 if result["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
