"""How often the caption-evidence rule (app/vision/caption_evidence.py) is right on labelled crops:
the figures whose caption names exactly one chart type, how many of them carry that type as their
labelled dominant type, in all and by the name that fired.

    python scripts/caption_evidence_rule.py --data-dir DIR [--labels tests/data/figure_types_train_recsys.jsonl]

DIR: a collection holding the labelled papers (labels keyed by paper sha256 + figure number).
"""
from __future__ import annotations

import argparse
import collections
import json
import sqlite3
from pathlib import Path

from app.vision.caption_evidence import caption_named_type
from app.vision.vocabulary import CONTENT_NAMES, NAMES, types_named_in


def fired_names(caption: str, named: str) -> list[str]:
    """The names of type `named` that occur in the caption (the rule's reason)."""
    return [n for n in NAMES[named] if n not in CONTENT_NAMES and types_named_in(n) == [named]
            and f" {n} " in f" {caption.lower()} "]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--labels", type=Path, default=Path("tests/data/figure_types_train_recsys.jsonl"))
    args = ap.parse_args()
    con = sqlite3.connect(args.data_dir / "figsearch.db")
    captions = {(sha, num): cap for sha, num, cap in con.execute(
        "select p.sha256, f.number, f.caption from figures f join papers p on p.id = f.paper_id where f.kind = 'figure'")}
    n = applies = right = 0
    by_name: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for line in args.labels.read_text().splitlines():
        label = json.loads(line)
        caption = captions.get((label["sha256"], label["number"]))
        if caption is None:
            continue
        n += 1
        named = caption_named_type(caption)
        if named is None:
            continue
        applies += 1
        right += named == label["type"]
        for name in fired_names(caption, named) or ["(other spelling)"]:
            by_name[f"{named}: {name}"][0] += 1
            by_name[f"{named}: {name}"][1] += named == label["type"]
    print(f"labelled figures found: {n}; the rule applies to {applies}, right for {right}")
    for key, (k, r) in sorted(by_name.items()):
        print(f"  {key}: {r} of {k}")


if __name__ == "__main__":
    main()
