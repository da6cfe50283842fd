"""How much caption text reaches the body text: every PDF under FOLDER is extracted as ingestion
does (`extract_pdf`), and its body sentences, and the mention sentences with their context, are
compared with the sentences of its own captions (six words or more, equal after whitespace and
case). Caption lines should never enter the body text.

    python scripts/caption_leaks.py ../shared/corpus/naacl2024
"""
from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path

from app.ingest.extract import extract_pdf
from app.search.explain import sentences


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    args = ap.parse_args()
    n_body = body_leaks = n_mention = mention_leaks = 0
    with tempfile.TemporaryDirectory() as tmp:
        for pdf in sorted(args.folder.rglob("*.pdf")):
            r = extract_pdf(pdf, tmp)
            if r.paper is None:
                continue
            captions = {_norm(s) for f in r.figures for s in sentences(f.caption or "") if len(s.split()) >= 6}
            n_body += len(r.paper.sentences)
            body_leaks += sum(_norm(s) in captions for s in r.paper.sentences)
            parts = [p for m in r.mentions for p in (m.before, m.sentence, m.after) if p]
            n_mention += len(parts)
            mention_leaks += sum(_norm(p) in captions for p in parts)
    print(f"body sentences {n_body}, equal to a caption sentence {body_leaks}; "
          f"mention sentences + context {n_mention}, caption sentences among them {mention_leaks}")


if __name__ == "__main__":
    main()
