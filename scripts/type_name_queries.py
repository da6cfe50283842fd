"""Whether a name of a chart kind should name a figure type: its query's top five, judged by looking.

A name in app/vision/vocabulary.NAMES makes the classifier's score for its type lead the query's
ranking. Where the classifier types that kind badly, the top five by words alone are better, so a
name is added only when its query's top five are no worse with it. Run each step with the code to
compare on PYTHONPATH (the version before and the version after), on copies of one collection typed
again by that version (`figsearch index --retype --data-dir COPY`):

  top5   QUERIES' top five figure ids in DATA_DIR, as JSON (one run per version)
  sheets the runs' top fives pooled per query, shuffled, on contact sheets without the version
         shown (one PNG per query, OUT/key.json says which figure is which number)
  score  p@5 per query and version from JUDGED (JSON: query -> the numbers on its sheet that are
         of the named kind, written by looking at the sheets)

  python scripts/type_name_queries.py top5 DATA_DIR > RUN.json
  python scripts/type_name_queries.py sheets DATA_DIR OUT BEFORE.json AFTER.json
  python scripts/type_name_queries.py score OUT/key.json JUDGED.json BEFORE.json AFTER.json
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

QUERIES = ["QQ plot", "qqplot", "normal probability plot", "residual plot", "survival curve",
           "Kaplan-Meier curve", "density plot", "trace plot", "barplot", "rootogram", "biplot", "dot plot",
           "pairs plot", "MA plot", "volcano plot", "dendrogram", "level plot", "ordination diagram"]


def top5(data_dir: str) -> dict[str, list[int]]:
    from app.cli import _searcher
    from app.settings import Settings

    engine = _searcher(Settings(data_dir=data_dir, database_url="", broker_url=""), True)
    return {q: [h.figure_id for h in engine.search(q, k=5, rerank=True)] for q in QUERIES}


def sheets(data_dir: str, out: str, runs: list[dict[str, list[int]]], width: int = 300) -> None:
    import sqlite3

    from PIL import Image, ImageDraw

    con = sqlite3.connect(f"file:{Path(data_dir) / 'figsearch.db'}?mode=ro", uri=True)
    paths = dict(con.execute("select id, image_path from figures"))
    Path(out).mkdir(parents=True, exist_ok=True)
    rng, key = random.Random(7), {}
    for n, q in enumerate(QUERIES):
        ids = sorted({i for run in runs for i in run[q]})
        rng.shuffle(ids)
        key[q] = ids
        rows = (len(ids) + 4) // 5
        sheet = Image.new("RGB", (width * 5, width * rows + 30), "white")
        draw = ImageDraw.Draw(sheet)
        draw.text((5, 5), f"query: {q}   (is each crop a {q}?)", fill="black")
        for k, fid in enumerate(ids):
            im = Image.open(Path(data_dir) / paths[fid]).convert("RGB")
            im.thumbnail((width - 10, width - 25))
            x, y = (k % 5) * width, (k // 5) * width + 30
            sheet.paste(im, (x + 5, y + 20))
            draw.text((x + 5, y + 3), f"#{k}", fill="red")
        sheet.save(Path(out) / f"{n:02d}.png")
    (Path(out) / "key.json").write_text(json.dumps(key))


def score(key: dict, judged: dict, before: dict, after: dict) -> None:
    total = [0.0, 0.0]
    for q in QUERIES:
        yes = {key[q][i] for i in judged.get(q, [])}
        p = [sum(i in yes for i in run[q]) / 5 for run in (before, after)]
        total = [t + x for t, x in zip(total, p)]
        print(f"{q:25s} before {p[0]:.1f} after {p[1]:.1f}{'  LOSES' if p[1] < p[0] else ''}")
    print(f"{'sum':25s} before {total[0]:.1f} after {total[1]:.1f}")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    load = lambda p: json.loads(Path(p).read_text())  # noqa: E731
    if cmd == "top5":
        print(json.dumps(top5(args[0])))
    elif cmd == "sheets":
        sheets(args[0], args[1], [load(a) for a in args[2:]])
    elif cmd == "score":
        score(*(load(a) for a in args[:4]))
    else:
        sys.exit(__doc__)
