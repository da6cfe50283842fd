"""What the rules that move a figure's type by its text do on labelled figures, set by set: the
caption rule as served (app/vision/caption_evidence.py: a named type's odds weighed against the
pixels) and the previous rules (the PDF text-layer rule, scripts/text_layer_rule.py, then the one
type a caption names anywhere made dominant at 99/104).

Each `--labels FILE[@DIR]` is one labelled set (named by the file's stem); DIR (default --data-dir)
is a collection holding its papers whose figures were typed by pixels alone
(`figsearch eval-types --data-dir DIR --gold FILE --reclassify --pixels-only`), so the stored
type scores are the pixel classifier's; the rules are applied here to those scores as
app/pipeline/classify.py applies them, the text layer read from the stored PDFs.

    python scripts/caption_evidence_rule.py --labels tests/data/figure_types_gold_cran2.jsonl@DB1 \\
        --labels tests/data/figure_types_gold_bio.jsonl@DB2 [--check FILE@DB3] [--candidates] \\
        [--by-name] [--changes] [--json OUT]

Per set: dominant accuracy (and shown accuracy) by pixels alone, by the previous rules and as
served, the paired differences with their paper-cluster bootstrap 95% intervals and in figures,
and for each rule how often it fires, is right when it fires, turns a right answer wrong and a
wrong one right; then the same pooled over the sets. `--by-name`: the served caption rule's names
and how often each was right; `--changes`: every figure whose previous or served type differs
from its pixel type.

`--candidates`: the previous rule and its refinements (CANDIDATES: text layer on / off; names read
anywhere, not as modifiers, in the first sentence, both, or none; the named type made dominant or
its odds multiplied by 32 ... 2), each set scored under each, and the choice by leaving one set
out: for every set in turn, the candidate with the most figures right on the other sets (ties:
the earlier candidate), scored on the held-out set against the previous rule; and the candidate
chosen on all sets (which the served rule should be). `--check FILE[@DIR]`: a set reported under
every choice but never used to choose.
"""
from __future__ import annotations

import argparse
import collections
import json
import re
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from app.stats import cluster_ci
from app.vision.caption_evidence import (NOT_EVIDENCE, caption_named_type, first_sentence, names_the_figure,
                                         names_with_next, with_caption_evidence)
from app.vision.figure_types import LABELS, TypeScores, reweighed
from app.vision.vocabulary import CONTENT_NAMES, NAMES, types_named_in

sys.path.insert(0, str(Path(__file__).parent))
from text_layer_rule import TextLayer, made_dominant, text_layer, with_text_layer_evidence  # noqa: E402


@dataclass
class Item:
    set: str
    paper: str
    number: int
    gold: str
    gold_types: list[str]
    caption: str
    pixels: TypeScores
    layer: TextLayer | None


def fired_names(caption: str, named: str) -> list[str]:
    """The names of type `named` that occur in the caption (the rule's reason)."""
    text = " " + re.sub(r"[^a-z0-9]+", " ", caption.lower()) + " "
    return [n for n in NAMES[named] if n not in CONTENT_NAMES and types_named_in(n) == [named]
            and f" {re.sub(r'[^a-z0-9]+', ' ', n)} " in text]


def _spec(value: str, data_dir: Path | None) -> tuple[str, Path, Path]:
    path, _, where = value.partition("@")
    d = Path(where) if where else data_dir
    if d is None:
        sys.exit(f"{value}: no collection (FILE@DIR or --data-dir)")
    name = Path(path).stem.removeprefix("figure_types_")
    return name, Path(path), d


def load_set(name: str, labels: Path, data_dir: Path) -> list[Item]:
    """The labelled figures found in `data_dir`, with their stored (pixel) scores, caption and text layer."""
    import pymupdf

    from app.pdfs import stored_pdf

    con = sqlite3.connect(f"file:{data_dir / 'figsearch.db'}?mode=ro", uri=True)
    rows = {(sha, num): (cap, ftype, json.loads(ftypes or "[]"), json.loads(scores or "{}"), page,
                         json.loads(region or "null") or json.loads(bbox or "null"))
            for sha, num, cap, ftype, ftypes, scores, page, region, bbox in con.execute(
                "select p.sha256, f.number, f.caption, f.figure_type, f.figure_types, f.type_scores, f.page, "
                "f.region_bbox, f.bbox from figures f join papers p on p.id = f.paper_id where f.kind = 'figure'")}
    items, docs = [], {}
    for line in labels.read_text().splitlines():
        if not line.strip():
            continue
        g = json.loads(line)
        row = rows.get((g["sha256"], g["number"]))
        if row is None or not row[3]:
            continue
        cap, ftype, ftypes, scores, page, rect = row
        layer = None
        if rect:
            if g["sha256"] not in docs:
                p = stored_pdf(data_dir, g["sha256"])
                docs[g["sha256"]] = pymupdf.open(p) if p else None
            doc = docs[g["sha256"]]
            if doc is not None and 1 <= page <= doc.page_count:
                layer = text_layer(doc[page - 1], rect)
        items.append(Item(name, g["sha256"], g["number"], g["type"], g.get("types") or [g["type"]], cap or "",
                          TypeScores(ftype, ftypes, {t: float(scores.get(t, 0.0)) for t in LABELS}), layer))
    for doc in docs.values():
        if doc is not None:
            doc.close()
    return items


# ---- the previous rule and its refinements --------------------------------------------------------

PREVIOUS_RIGHT = 99 / 104  # the previous rule's score of the named type (its precision on the recsys labels)


def named_type(caption: str, modifiers: bool, first: bool) -> str | None:
    """The one chart type the caption names: as the previous rule read names (anywhere, any
    name), or with the refinements: `modifiers` drops names followed by a word that makes them a
    modifier of it, `first` reads the first sentence only (both: caption_evidence.caption_named_type)."""
    text = first_sentence(caption) if first else caption
    if not modifiers:
        named = {t for t in types_named_in(text or "", kinds_only=True) if t not in NOT_EVIDENCE}
    else:
        named = {t for t, name, follow in names_with_next(text) if t not in NOT_EVIDENCE
                 and name not in CONTENT_NAMES and names_the_figure(follow)}
    return next(iter(named)) if len(named) == 1 else None


@dataclass(frozen=True)
class Candidate:
    name: str
    layer: bool = True  # the text-layer rule
    captions: str = "names"  # names | modifiers | first | both | none
    weight: float | None = None  # None: the named type made dominant (previous rule); else its odds times weight

    def apply(self, it: Item) -> str:
        r = with_text_layer_evidence(it.pixels, it.layer) if self.layer else it.pixels
        if self.captions == "none":
            return r.figure_type
        named = named_type(it.caption, self.captions in ("modifiers", "both"), self.captions in ("first", "both"))
        if named is None or named not in LABELS:
            return r.figure_type
        if self.weight is None:
            return made_dominant(r, named, PREVIOUS_RIGHT).figure_type
        return reweighed(r, named, self.weight).figure_type


class Served:
    name = "served"

    @staticmethod
    def apply(it: Item) -> str:
        """What app/pipeline/classify.py stores now."""
        return with_caption_evidence(it.pixels, it.caption).figure_type


SERVED = Served()
PREVIOUS = Candidate("previous: text layer on, names made dominant")
PIXELS = Candidate("pixels", layer=False, captions="none")
CANDIDATES = [PREVIOUS] + [Candidate(f"layer={'on' if layer else 'off'} captions={c} w={w or 'dominant'}", layer, c, w)
                           for layer in (True, False) for c in ("names", "modifiers", "first", "both", "none")
                           for w in (None, 32.0, 16.0, 8.0, 4.0, 2.0) if not (c == "none" and w is not None)
                           if (layer, c, w) != (True, "names", None)]


# ---- reports -------------------------------------------------------------------------------------

def paired(items: list[Item], a: Callable[[Item], str], b: Callable[[Item], str]) -> dict:
    """b - a in dominant accuracy, figures right, and the paired paper-cluster bootstrap interval;
    shown accuracy (the dominant type is one the figure shows) of both."""
    ra = [float(a(it) == it.gold) for it in items]
    rb = [float(b(it) == it.gold) for it in items]
    diff = [y - x for x, y in zip(ra, rb)]
    return {"n": len(items), "a": round(float(np.mean(ra)), 3), "b": round(float(np.mean(rb)), 3),
            "right_a": int(sum(ra)), "right_b": int(sum(rb)), "diff": round(float(np.mean(diff)), 3),
            "ci95": [round(x, 3) for x in cluster_ci([it.paper for it in items], diff)],
            "shown_a": round(float(np.mean([a(it) in it.gold_types for it in items])), 3),
            "shown_b": round(float(np.mean([b(it) in it.gold_types for it in items])), 3)}


def effect(items: list[Item], before: Callable[[Item], str], after: Callable[[Item], str]) -> dict:
    return {"changed": sum(before(it) != after(it) for it in items),
            "right_to_wrong": sum(before(it) == it.gold != after(it) for it in items),
            "wrong_to_right": sum(before(it) != it.gold == after(it) for it in items)}


def caption_rule_row(items: list[Item], named: Callable[[str], str | None], before: Callable[[Item], str],
                     after: Callable[[Item], str]) -> dict:
    fired = [it for it in items if named(it.caption) in LABELS]
    return {"fires": len(fired), "right_when_fired": sum(named(it.caption) == it.gold for it in fired),
            **effect(items, before, after)}


def rule_rows(items: list[Item]) -> dict:
    """Pixels, the previous rules and the served one: accuracies, paired differences, and what each
    rule does on top of what it is applied to."""
    pix = PIXELS.apply
    layer = lambda it: with_text_layer_evidence(it.pixels, it.layer).figure_type  # noqa: E731
    lay_fired = [it for it in items if it.layer is not None and it.layer.is_text]
    return {
        "set": items[0].set, "papers": len({it.paper for it in items}),
        "previous_vs_pixels": paired(items, pix, PREVIOUS.apply),
        "served_vs_pixels": paired(items, pix, SERVED.apply),
        "served_vs_previous": paired(items, PREVIOUS.apply, SERVED.apply),
        "text_layer": {"fires": len(lay_fired), "right_when_fired": sum(it.gold == "text" for it in lay_fired),
                       **effect(items, pix, layer)},
        "previous_caption": caption_rule_row(items, lambda c: named_type(c, False, False), layer, PREVIOUS.apply),
        "served_caption": caption_rule_row(items, caption_named_type, pix, SERVED.apply),
    }


def _ci(d: dict) -> str:
    return f"{d['diff']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}] ({d['right_b'] - d['right_a']:+d})"


def _rule(r: dict) -> str:
    return (f"fires {r['fires']} right {r['right_when_fired']} r->w {r['right_to_wrong']} "
            f"w->r {r['wrong_to_right']}")


def fmt_row(r: dict) -> str:
    pp, sp, sv = r["previous_vs_pixels"], r["served_vs_pixels"], r["served_vs_previous"]
    return (f"{r['set']:<14} {sp['n']:>4} figures {r['papers']:>3} papers  dominant: pixels {pp['a']:.3f}  "
            f"previous {pp['b']:.3f}  served {sp['b']:.3f}  (shown {pp['shown_a']:.3f} / {pp['shown_b']:.3f} / "
            f"{sp['shown_b']:.3f})\n"
            f"    previous - pixels {_ci(pp)}   served - pixels {_ci(sp)}   served - previous {_ci(sv)}\n"
            f"    previous: text layer {_rule(r['text_layer'])}; caption {_rule(r['previous_caption'])}\n"
            f"    served: caption {_rule(r['served_caption'])}")


def leave_one_set_out(sets: dict[str, list[Item]], check: list[Item]) -> dict:
    """For each set: the candidate with the most figures right on the other sets (ties: the
    earlier one), against the previous rule on the held-out set."""
    right = {c.name: {s: sum(c.apply(it) == it.gold for it in items) for s, items in sets.items()}
             for c in CANDIDATES}

    def best(sets_used: list[str]) -> Candidate:
        return max(CANDIDATES, key=lambda c: (sum(right[c.name][s] for s in sets_used), -CANDIDATES.index(c)))

    rows, pooled = [], []
    for held in sets:
        chosen = best([s for s in sets if s != held])
        rows.append({"held_out": held, "chosen": chosen.name, **paired(sets[held], PREVIOUS.apply, chosen.apply)})
        pooled += [(it, chosen) for it in sets[held]]
    diff = [float(c.apply(it) == it.gold) - float(PREVIOUS.apply(it) == it.gold) for it, c in pooled]
    on_all = best(list(sets))
    every = [it for v in sets.values() for it in v] + check
    out = {"rows": rows, "pooled": {"n": len(pooled), "diff": round(float(np.mean(diff)), 4),
                                    "figures": int(sum(diff)),
                                    "ci95": [round(x, 4) for x in cluster_ci([it.paper for it, _ in pooled], diff)]},
           "chosen_on_all": on_all.name,
           "served_differs_from_it": sum(SERVED.apply(it) != on_all.apply(it) for it in every),
           "right": right}
    if check:
        out["check"] = {c: paired(check, PREVIOUS.apply, next(x for x in CANDIDATES if x.name == c).apply)
                        for c in sorted({r["chosen"] for r in rows} | {on_all.name})}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path)
    ap.add_argument("--labels", action="append", required=True, help="FILE[@DIR], repeatable: one labelled set each")
    ap.add_argument("--check", action="append", default=[], help="FILE[@DIR]: reported, never chosen on")
    ap.add_argument("--by-name", action="store_true")
    ap.add_argument("--changes", action="store_true")
    ap.add_argument("--candidates", action="store_true")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    sets = {name: load_set(name, path, d) for name, path, d in (_spec(v, args.data_dir) for v in args.labels)}
    check = [it for v in args.check for it in load_set(*_spec(v, args.data_dir))]
    report: dict = {"sets": []}
    for name, items in list(sets.items()) + ([("check:" + check[0].set, check)] if check else []):
        if not items:
            print(f"{name}: no labelled figure found")
            continue
        row = rule_rows(items)
        report["sets"].append(row)
        print(fmt_row(row))
        if args.by_name:
            by_name: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
            for it in items:
                named = caption_named_type(it.caption)
                if named is None:
                    continue
                for n in fired_names(it.caption, named) or ["(other spelling)"]:
                    by_name[f"{named}: {n}"][0] += 1
                    by_name[f"{named}: {n}"][1] += named == it.gold
            for key, (k, r) in sorted(by_name.items()):
                print(f"    served caption names {key}: right {r} of {k}")
        if args.changes:
            for it in items:
                p, prev, s = it.pixels.figure_type, PREVIOUS.apply(it), SERVED.apply(it)
                if p != prev or p != s:
                    print(f"    {it.paper[:10]} #{it.number} gold {it.gold}: pixels {p} ({it.pixels.scores[p]:.2f}), "
                          f"previous {prev}, served {s}: {it.caption[:120]!r}")
    pooled_items = [it for v in sets.values() for it in v]
    for label, a, b in (("previous - pixels", PIXELS, PREVIOUS), ("served - pixels", PIXELS, SERVED),
                        ("served - previous", PREVIOUS, SERVED)):
        pr = paired(pooled_items, a.apply, b.apply)
        report[f"pooled {label}"] = pr
        print(f"pooled over the labelled sets (check left out), {label}: {_ci(pr)} of {pr['n']}")
    if args.candidates:
        loso = leave_one_set_out({k: v for k, v in sets.items() if v}, check)
        report["leave_one_set_out"] = loso
        print("candidates (figures right per set):")
        for c in CANDIDATES:
            print(f"  {c.name:<45} " + " ".join(f"{s} {v}" for s, v in loso["right"][c.name].items())
                  + f"  total {sum(loso['right'][c.name].values())}")
        for r in loso["rows"]:
            print(f"held out {r['held_out']}: chosen {r['chosen']!r}: previous {r['a']:.3f} -> {r['b']:.3f} "
                  f"{_ci(r)}")
        p = loso["pooled"]
        print(f"pooled held-out gain over the previous rule: {p['diff']:+.4f} ({p['figures']:+d} figures of {p['n']}) "
              f"[{p['ci95'][0]:+.4f}, {p['ci95'][1]:+.4f}]")
        print(f"chosen on all sets: {loso['chosen_on_all']!r}; the served rule differs from it on "
              f"{loso['served_differs_from_it']} figures")
        for c, d in loso.get("check", {}).items():
            print(f"check set under {c!r}: previous {d['a']:.3f} -> {d['b']:.3f} {_ci(d)}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
