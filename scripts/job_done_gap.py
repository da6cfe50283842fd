"""How long an uploaded paper's job says "done" before its figures can be found: each PDF is
uploaded as a job of its own to a running server, and the job's endpoint and a search restricted to
the new paper are polled every 0.1 s. Prints, per PDF, the seconds from the upload to the first
"done", to the first search that finds one of its figures by its caption, and the gap between them
(positive: "done" was shown while the figures could not be found yet), and, when the server has it,
when the job's `searchable` field first said true. The rest uses only answer fields every version
of the API has, so it measures any version of the server.

    python scripts/job_done_gap.py --base http://127.0.0.1:8766 --token TOKEN PDF...
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import httpx


def searchable(client: httpx.Client, base: str, paper_id: int) -> bool:
    figures = client.get(f"{base}/api/v1/papers/{paper_id}").json().get("figures", [])
    for f in figures[:1]:
        hits = client.get(f"{base}/api/v1/search", params={"q": f["caption"][:400], "paper_id": paper_id,
                                                            "kind": "both", "k": 50}).json().get("items", [])
        return f["figure_id"] in [h["figure_id"] for h in hits]
    return False


def measure(client: httpx.Client, base: str, auth: dict, pdf: Path,
            timeout: float) -> tuple[float, float, float | None]:
    t0 = time.monotonic()
    r = client.post(f"{base}/api/v1/admin/collections", headers=auth,
                    files={"files": (pdf.name, pdf.read_bytes(), "application/pdf")})
    r.raise_for_status()
    url = f"{base}/api/v1/admin/jobs/{r.json()['job_id']}"
    t_done = t_found = t_flag = None
    flagged = False  # whether the server's answer has `searchable`
    while time.monotonic() - t0 < timeout and (t_done is None or t_found is None or (flagged and t_flag is None)):
        job = client.get(url, headers=auth).json()
        flagged = "searchable" in job
        now = time.monotonic() - t0
        if t_done is None and job["status"] == "done":
            t_done = now
        if t_flag is None and job.get("searchable"):
            t_flag = now
        papers = [f["paper_id"] for f in job.get("files") or [] if f["status"] == "ok" and f["paper_id"]]
        if t_found is None and papers and searchable(client, base, papers[0]):
            t_found = time.monotonic() - t0
        time.sleep(0.1)
    if t_done is None or t_found is None:
        raise SystemExit(f"{pdf.name}: not done and searchable within {timeout:g} s (a PDF that is new to the "
                         "collection and has figures is needed)")
    return t_done, t_found, t_flag


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("pdfs", nargs="+", type=Path)
    a = ap.parse_args()
    auth = {"Authorization": f"Bearer {a.token}"}
    gaps = []
    with httpx.Client(timeout=60) as client:
        for pdf in a.pdfs:
            t_done, t_found, t_flag = measure(client, a.base, auth, pdf, a.timeout)
            gaps.append(t_found - t_done)
            flag = f"  `searchable` true {t_flag:6.1f} s" if t_flag is not None else ""
            print(f"{pdf.name[:60]:60s} done {t_done:6.1f} s  found {t_found:6.1f} s  gap {gaps[-1]:+6.1f} s{flag}",
                  flush=True)
    print(f"{len(gaps)} jobs: gap median {statistics.median(gaps):+.1f} s, max {max(gaps):+.1f} s "
          f"(done shown while not searchable in {sum(g > 0.2 for g in gaps)} of them, counting gaps over 0.2 s)")


if __name__ == "__main__":
    main()
