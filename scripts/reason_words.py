"""Words named on related-figure cards, judged by eye: draw the sample, show it for judging, score it.

    python scripts/reason_words.py dump DATA_DIR OUT.json [--seed 7] [--wide]
    python scripts/reason_words.py sheet OUT.json [WIDE.json] > SHEET.txt
    python scripts/reason_words.py score tests/data/reason_words_judged.jsonl OUT.json [OUT_AFTER.json]
    python scripts/reason_words.py orders OUT.json OUT_AFTER.json

`dump` serves DATA_DIR in-process, draws 40 query figures (kind figure) with `random.Random(seed)`,
splits them by draw position (even: development, odd: check) and writes, for each, its 12 related
figures of other papers (ids and scores: the order) and, for the first five, the word lists a card
names: "both mention" (`matched_terms`), "both show:", "both captions mention", "related paper: both
on". `--wide` writes the lists a looser rule would name (every shared word, rarest first, a few more
of them; no filter of ordinary words): the pool judged beside the shown words, so that a changed rule
naming a word the old one hid is scored on a judgment made before the change.
`sheet` prints each card with both captions and titles, its words to judge.
`score` gives, per half, the share of the named words judged specific and the share of cards with
a reason (any reason or word; with words), with a paired bootstrap by query paper for the change.
`orders` checks that two dumps rank the same figures with the same scores.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

N_QUERIES = 40
TOP = 5
LISTS = {"both show: ": "both show", "both captions mention ": "both captions mention",
         "related paper: both on ": "related paper"}


def word_lists(card: dict) -> dict[str, list[str]]:
    """The word lists a card names, by kind ("both mention" first)."""
    out = {"both mention": list(card.get("matched_terms") or [])}
    for r in card.get("reasons") or []:
        for pre, name in LISTS.items():
            if r.startswith(pre):
                out[name] = [w.strip() for w in r[len(pre):].split(",") if w.strip()]
    return {k: v for k, v in out.items() if v}


def _wide() -> None:
    """Every shared word, rarest first, a few more than shown: no filter of ordinary words."""
    import app.api.serialize as serialize
    import app.search.explain as explain

    def loose(stems, idf=None, max_terms=explain.MAX_TERMS, topical=True):
        kept = list(dict.fromkeys(stems))
        if idf:
            kept.sort(key=lambda s: -idf.get(s, 0.0))
        return kept[:max_terms + 4]

    explain.informative_terms = serialize.informative_terms = loose


def dump(data_dir: str, out: str, seed: int, wide: bool) -> None:
    from fastapi.testclient import TestClient

    from app.api.main import create_app
    from app.settings import Settings

    if wide:
        _wide()
    settings = Settings(data_dir=data_dir, database_url="", broker_url="", warm_encoder=False)
    with TestClient(create_app(settings)) as c:
        c.app.state.engine_holder.refresh(block=True)
        figs, off = [], 0
        while True:
            page = c.get(f"/api/v1/figures?limit=100&offset={off}&kind=figure").json()
            figs += [(f["figure_id"], f["paper_id"], f["caption"], f["paper_title"]) for f in page["items"]]
            off += 100
            if off >= page["total"]:
                break
        chosen = random.Random(seed).sample(sorted(figs), N_QUERIES)
        queries = []
        for i, (fid, pid, caption, title) in enumerate(chosen):
            items = c.get(f"/api/v1/figures/{fid}/similar?k=12&scope=other_papers").json()["items"]
            queries.append({
                "query": fid, "paper": pid, "half": "dev" if i % 2 == 0 else "check", "caption": caption,
                "title": title, "order": [[i["figure_id"], i["score"]] for i in items],
                "cards": [{"figure_id": i["figure_id"], "paper": i["paper_id"], "caption": i["caption"],
                           "title": i["paper_title"], "reasons": i["reasons"], "matched_terms": i["matched_terms"],
                           "lists": word_lists(i)} for i in items[:TOP]]})
    Path(out).write_text(json.dumps({"seed": seed, "wide": wide, "figures": len(figs), "queries": queries}, indent=1))
    print(f"{len(figs)} figures; {len(queries)} queries -> {out}")


def sheet(dumped: str, wide: str | None) -> None:
    qs = json.loads(Path(dumped).read_text())["queries"]
    pool = {q["query"]: q for q in json.loads(Path(wide).read_text())["queries"]} if wide else {}
    for q in qs:
        print(f"=== Q{q['query']} [{q['half']}] {q['title'][:90]}\n    {q['caption'][:300]}")
        wq = pool.get(q["query"], {"cards": []})
        wcards = {c["figure_id"]: c for c in wq["cards"]}
        for c in q["cards"]:
            print(f"  -- F{c['figure_id']} {c['title'][:90]}\n     {c['caption'][:300]}")
            print(f"     reasons: {c['reasons']}")
            for name, words in c["lists"].items():
                print(f"     {name}: {', '.join(words)}")
            for name, words in (wcards.get(c["figure_id"], {}).get("lists") or {}).items():
                more = [w for w in words if w not in c["lists"].get(name, [])]
                if more:
                    print(f"     (pool) {name}: {', '.join(more)}")
    print()


def _key(word: str) -> tuple:
    """A judged word and its other endings alike ("representation", "representations")."""
    from app.search.text import analyze

    return tuple(analyze(word)) or (word.lower(),)


def _load_judged(path: str) -> dict[tuple, int]:
    judged = {}
    for line in Path(path).read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            judged[(r["query"], r["figure_id"], r["list"], r["word"].lower())] = r["specific"]
            judged.setdefault((r["query"], r["figure_id"], r["list"], _key(r["word"])), r["specific"])
    return judged


def _measures(qs: list[dict], judged: dict) -> dict[int, dict]:
    """Per query: named words, of them judged specific, unjudged, cards, cards with a reason, with words."""
    out = {}
    for q in qs:
        m = dict(words=0, specific=0, unjudged=0, cards=0, with_reason=0, with_words=0, paper=q["paper"])
        for c in q["cards"]:
            m["cards"] += 1
            m["with_reason"] += bool(c["reasons"] or c["matched_terms"])
            m["with_words"] += bool(c["lists"])
            for name, words in c["lists"].items():
                for w in words:
                    j = judged.get((q["query"], c["figure_id"], name, w.lower()),
                                   judged.get((q["query"], c["figure_id"], name, _key(w))))
                    if j is None:
                        m["unjudged"] += 1
                        continue
                    m["words"] += 1
                    m["specific"] += j
        out[q["query"]] = m
    return out


def _shares(ms: list[dict]) -> tuple[float, float, float]:
    words = sum(m["words"] for m in ms)
    cards = sum(m["cards"] for m in ms)
    return (sum(m["specific"] for m in ms) / words if words else float("nan"),
            sum(m["with_reason"] for m in ms) / cards, sum(m["with_words"] for m in ms) / cards)


def score(judged_path: str, before: str, after: str | None, boot: int = 2000) -> None:
    import numpy as np

    judged = _load_judged(judged_path)
    runs = [json.loads(Path(p).read_text())["queries"] for p in [before] + ([after] if after else [])]
    res = {}
    for half in ("dev", "check"):
        per = [_measures([q for q in qs if q["half"] == half], judged) for qs in runs]
        row = {}
        for name, p in zip(("before", "after"), per):
            s, r, w = _shares(list(p.values()))
            row[name] = {"specific_share": round(s, 3), "cards_with_a_reason": round(r, 3),
                         "cards_with_words": round(w, 3), "words_judged": sum(m["words"] for m in p.values()),
                         "words_unjudged": sum(m["unjudged"] for m in p.values()),
                         "cards": sum(m["cards"] for m in p.values())}
        if len(per) == 2:
            papers = sorted({m["paper"] for m in per[0].values()})
            by_paper = {p: [q for q, m in per[0].items() if m["paper"] == p] for p in papers}
            rng = np.random.default_rng(0)
            diffs = []
            for _ in range(boot):
                qs = [q for p in rng.choice(papers, len(papers)) for q in by_paper[p]]
                a, b = _shares([per[0][q] for q in qs]), _shares([per[1][q] for q in qs])
                diffs.append([b[0] - a[0], b[1] - a[1], b[2] - a[2]])
            lo, hi = np.nanpercentile(np.array(diffs), [2.5, 97.5], axis=0)
            row["change_95ci"] = {k: [round(float(lo[i]), 3), round(float(hi[i]), 3)]
                                  for i, k in enumerate(("specific_share", "cards_with_a_reason", "cards_with_words"))}
        res[half] = row
    print(json.dumps(res, indent=1))


def orders(a: str, b: str) -> None:
    qa, qb = (json.loads(Path(p).read_text())["queries"] for p in (a, b))
    same = [x["query"] == y["query"] and x["order"] == y["order"] for x, y in zip(qa, qb)]
    print(json.dumps({"queries": len(same), "identical_orders": sum(same),
                      "ranked_figures": sum(len(x["order"]) for x in qa)}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("data_dir")
    d.add_argument("out")
    d.add_argument("--seed", type=int, default=7)
    d.add_argument("--wide", action="store_true")
    s = sub.add_parser("sheet")
    s.add_argument("dumped")
    s.add_argument("wide", nargs="?")
    sc = sub.add_parser("score")
    sc.add_argument("judged")
    sc.add_argument("before")
    sc.add_argument("after", nargs="?")
    o = sub.add_parser("orders")
    o.add_argument("a")
    o.add_argument("b")
    args = ap.parse_args()
    if args.cmd == "dump":
        dump(args.data_dir, args.out, args.seed, args.wide)
    elif args.cmd == "sheet":
        sheet(args.dumped, args.wide)
    elif args.cmd == "score":
        score(args.judged, args.before, args.after)
    else:
        orders(args.a, args.b)


if __name__ == "__main__":
    main()
