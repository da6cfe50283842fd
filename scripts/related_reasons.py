"""Related-figure reasons as a researcher reads them: dump them, then count the weak words.

    python scripts/related_reasons.py dump DATA_DIR OUT.json [--seed 0]
    python scripts/related_reasons.py count OUT.json [tests/data/reason_weak_words.txt]
    python scripts/related_reasons.py count OUT.json --prefixes
    python scripts/related_reasons.py check DATA_DIR OUT.json

`dump` serves DATA_DIR in-process and writes, for 60 random figures (the seed draws them), the top five
related figures of other papers with their `matched_terms` and `reasons`, and the first 24 results of a
few text queries (ids and scores, to check that a change of reasons leaves the order alone).
`count` prints the words of "both mention" and of the caption/title reasons with their counts (without
a word file: for marking weak words by looking), or, with a file of words marked weak, the share of
cards whose reasons carry one; with --prefixes, the cards whose reasons name a prefix alone ("related
paper: both on multi"; app.search.explain.BOUND_PREFIXES) or a bound second part ("wise" of step-wise).
`check` reads the texts of the dumped figures (caption, mention sentences, words printed inside) from
DATA_DIR and counts the "both mention" words (`matched_terms`) that one of the two figures does not
print: a word is printed by a text when one of its words has the same stems ("SELF-GUARD" is not
printed by a text that says "self-supervision", nor "wise" by one that says "frame-wise"; strict:
"objective" is not printed by a text that says only "dual-objective" either), and of those the
compounds (a chip "step-wise" on a figure that prints "frame-wise").
"""
from __future__ import annotations

import argparse
import collections
import json
import random
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

QUERIES = ["recall curve", "attention heat map", "conversion rate", "BLEU scores by language",
           "training loss", "embedding visualization t-SNE", "click-through rate prediction", "ablation"]
REASON_PREFIXES = ("both captions mention ", "related paper: both on ")


def dump(data_dir: str, out: str, seed: int) -> None:
    from fastapi.testclient import TestClient

    from app.api.main import create_app
    from app.settings import Settings

    settings = Settings(data_dir=data_dir, database_url="", broker_url="", warm_encoder=False)
    with TestClient(create_app(settings)) as c:
        c.app.state.engine_holder.refresh(block=True)
        figs, off = [], 0
        while True:
            page = c.get(f"/api/v1/figures?limit=100&offset={off}&kind=figure").json()
            figs += [f["figure_id"] for f in page["items"]]
            off += 100
            if off >= page["total"]:
                break
        chosen = random.Random(seed).sample(sorted(figs), 60)
        related = {}
        for fid in chosen:
            items = c.get(f"/api/v1/figures/{fid}/similar?k=5&scope=other_papers").json()["items"]
            related[fid] = [{k: i[k] for k in ("figure_id", "score", "matched_terms", "reasons")} for i in items]
        search = {q: [{k: i.get(k) for k in ("figure_id", "score", "matched_terms", "caption_highlights")}
                      for i in c.get("/api/v1/search", params={"q": q, "k": 24}).json()["items"]]
                  for q in QUERIES}
    Path(out).write_text(json.dumps({"related": related, "search": search}, indent=1))
    print(f"{len(figs)} figures; {sum(len(v) for v in related.values())} related cards -> {out}")


def _reason_words(card: dict) -> list[str]:
    return [w.strip().lower() for r in card["reasons"] for pre in REASON_PREFIXES if r.startswith(pre)
            for w in r[len(pre):].split(",")]


def count_prefixes(dumped: str) -> None:
    from app.search.explain import BOUND_PARTS

    cards = [c for v in json.loads(Path(dumped).read_text())["related"].values() for c in v]
    shown = ("both show: ",) + REASON_PREFIXES
    bare = [r for c in cards for r in c["reasons"] for pre in shown if r.startswith(pre)
            and {w.strip().lower() for w in r[len(pre):].split(",")} & BOUND_PARTS]
    print(json.dumps({"cards": len(cards),
                      "cards_with_a_prefix_alone": sum(1 for c in cards if any(r in bare for r in c["reasons"])),
                      "reasons": sorted(set(bare))}, indent=1))


def check(data_dir: str, dumped: str) -> None:
    from sqlalchemy import select

    from app.api.serialize import mention_texts
    from app.db.schema import Figure
    from app.db.session import session_scope
    from app.search.explain import _TOKEN_RE
    from app.search.text import analyze
    from app.settings import Settings

    related = {int(k): v for k, v in json.loads(Path(dumped).read_text())["related"].items()}
    ids = set(related) | {c["figure_id"] for v in related.values() for c in v}
    settings = Settings(data_dir=data_dir, database_url="", broker_url="")
    with session_scope(settings.db_url) as db:
        mentions = mention_texts(db, sorted(ids))
        texts = {fid: f"{cap or ''} {mentions.get(fid, '')} {words or ''}" for fid, cap, words in db.execute(
            select(Figure.id, Figure.caption, Figure.region_text).where(Figure.id.in_(sorted(ids)))).all()}
    printed = {fid: {tuple(analyze(m.group(0))) for m in _TOKEN_RE.finditer(t)} for fid, t in texts.items()}
    cards = untrue_cards = words = 0
    untrue = collections.Counter()
    for query, items in related.items():
        for c in items:
            cards += 1
            bad = [w for w in c["matched_terms"]
                   if not all(tuple(analyze(w)) in printed.get(f, set()) for f in (query, c["figure_id"]))]
            words += len(c["matched_terms"])
            untrue.update(bad)
            untrue_cards += bool(bad)
    compounds = {w: n for w, n in untrue.items() if "-" in w}  # a compound chip one figure does not print at all
    print(json.dumps({"cards": cards, "both_mention_words": words, "words_one_figure_does_not_print": sum(untrue.values()),
                      "cards_with_such_a_word": untrue_cards,
                      "of_which_compounds": sum(compounds.values()), "words": dict(untrue.most_common())}, indent=1))


def count(dumped: str, weak_file: str | None) -> None:
    cards = [c for v in json.loads(Path(dumped).read_text())["related"].values() for c in v]
    words = collections.Counter(w.lower() for c in cards for w in c["matched_terms"])
    if weak_file is None:
        print("both mention:", " ".join(f"{w}:{n}" for w, n in words.most_common()))
        reason_words = collections.Counter(w for c in cards for w in _reason_words(c))
        print("caption/title reasons:", " ".join(f"{w}:{n}" for w, n in reason_words.most_common()))
        return
    weak = set(Path(weak_file).read_text().split())
    with_terms = [c for c in cards if c["matched_terms"]]
    weak_cards = sum(1 for c in with_terms if {w.lower() for w in c["matched_terms"]} & weak)
    weak_words = sum(n for w, n in words.items() if w in weak)
    print(json.dumps({
        "cards": len(cards),
        "cards_with_both_mention": len(with_terms),
        "of_those_with_a_weak_word": weak_cards,
        "weak_words": weak_words, "both_mention_words": sum(words.values()),
        "cards_with_a_weak_caption_or_title_reason": sum(1 for c in cards if set(_reason_words(c)) & weak),
        "cards_with_no_reason_and_no_words": sum(1 for c in cards if not c["matched_terms"] and not c["reasons"]),
        "title_reasons_in_capitals": sum(1 for c in cards for r in c["reasons"]
                                         if r.startswith(REASON_PREFIXES[1]) and re.search(r"[A-Z]{5,}", r)),
    }, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("data_dir")
    d.add_argument("out")
    d.add_argument("--seed", type=int, default=0)
    n = sub.add_parser("count")
    n.add_argument("dumped")
    n.add_argument("weak_file", nargs="?")
    n.add_argument("--prefixes", action="store_true", help="count the reasons that name a prefix alone")
    c = sub.add_parser("check")
    c.add_argument("data_dir")
    c.add_argument("dumped")
    args = ap.parse_args()
    if args.cmd == "check":
        check(args.data_dir, args.dumped)
    elif args.cmd == "dump":
        dump(args.data_dir, args.out, args.seed)
    elif args.prefixes:
        count_prefixes(args.dumped)
    else:
        count(args.dumped, args.weak_file)


if __name__ == "__main__":
    main()
