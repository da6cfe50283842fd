"""How often the year read from each paper of a collection is its publication year, for collections
whose file names start with the year ("2014 (Toronto) [Dropout] ....pdf") or whose papers share one
year (`--year 2024`, e.g. a conference's proceedings). Prints the share exact and within one year
(arXiv years often differ by one from the venue's) and every paper that is off.

    python scripts/check_years.py --data-dir DIR [--year 2024]
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path

from sqlalchemy import select

from app.db.schema import Paper
from app.db.session import session_scope
from app.settings import Settings

NAME_YEAR = re.compile(r"((?:19|20)\d\d)\b")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--year", type=int, help="the year of every paper whose file name has none")
    a = ap.parse_args()
    settings = Settings(data_dir=a.data_dir, database_url="", broker_url="")
    with session_scope(settings.db_url) as s:
        papers = s.execute(select(Paper.source, Paper.year, Paper.title)).all()
    judged = []
    for source, year, title in papers:
        m = NAME_YEAR.match(Path(source).name)
        expected = int(m.group(1)) if m else a.year
        if expected is not None:
            judged.append((expected, year, title))
    if not judged:
        raise SystemExit("no paper with an expected year: name files by year or pass --year")
    exact = sum(y == e for e, y, _ in judged)
    near = sum(y is not None and abs(y - e) <= 1 for e, y, _ in judged)
    print(f"papers {len(judged)}  exact {exact / len(judged):.3f}  within one year {near / len(judged):.3f}")
    for e, y, title in sorted(judged, key=lambda r: r[2]):
        if y != e:
            print(f"  expected {e}  read {y}  {title[:70]}")


if __name__ == "__main__":
    main()
