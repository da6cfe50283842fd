"""Compare our figure extraction with a peer extractor's crops and captions (not labels).

    python scripts/compare_peer.py ../shared/corpus/naacl2024 [--out /tmp/peer]

Each folder holds paper.pdf and the peer's figures.json ({"figures": [{number, caption, images}]})
with its images. Prints: recall (peer figure numbers we also extract), caption match (normalised
caption similarity >= 0.8 among found figures) and crop agreement (peer figures given as one image:
aspect ratio within 20% and 32x32 grey-level correlation >= 0.6 with our crop; figures the peer
split into several images are counted apart).
"""
from __future__ import annotations

import argparse
import difflib
import json
import pathlib
import re
import sys
import tempfile

import numpy as np
from PIL import Image

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.ingest.extract import Limits, extract_pdf  # noqa: E402
from app.labels import LABEL_PREFIX_RE  # noqa: E402


def _norm(caption: str) -> str:
    return re.sub(r"\s+", " ", LABEL_PREFIX_RE.sub("", caption or "", count=1)).strip().lower()


def _vec(path: pathlib.Path) -> tuple[float, np.ndarray]:
    im = Image.open(path).convert("L")
    a = np.asarray(im.resize((32, 32), Image.BILINEAR), dtype=float).ravel()
    return im.width / max(im.height, 1), (a - a.mean()) / (a.std() + 1e-6)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=pathlib.Path)
    ap.add_argument("--out", type=pathlib.Path, default=None)
    a = ap.parse_args()
    out = a.out or pathlib.Path(tempfile.mkdtemp(prefix="peer-"))
    n_peer = found = cap_ok = single = agree = multi = 0
    rows = []
    for folder in sorted(p for p in a.root.iterdir() if (p / "figures.json").is_file()):
        peer = json.loads((folder / "figures.json").read_text())["figures"]
        ex = extract_pdf(folder / "paper.pdf", out / folder.name, Limits())
        ours = {f.number: f for f in ex.figures if f.kind == "figure"}
        for pf in peer:
            n_peer += 1
            f = ours.get(pf["number"])
            row = {"paper": folder.name, "number": pf["number"], "found": f is not None}
            if f is not None:
                found += 1
                row.update(page=f.page, bbox=f.bbox, image=f.image_path)
                sim = difflib.SequenceMatcher(None, _norm(pf["caption"]), _norm(f.caption)).ratio()
                row["caption_sim"] = round(sim, 3)
                cap_ok += sim >= 0.8
                if len(pf["images"]) == 1:
                    single += 1
                    ra, va = _vec(folder / pf["images"][0])
                    rb, vb = _vec(out / folder.name / f.image_path)
                    corr = float(np.mean(va * vb))
                    ok = abs(np.log(ra / rb)) <= np.log(1.2) and corr >= 0.6
                    agree += bool(ok)
                    row.update(aspect=[round(ra, 2), round(rb, 2)], corr=round(corr, 2), crop_agrees=bool(ok))
                else:
                    multi += 1
            rows.append(row)
    (out / "peer_compare.json").write_text(json.dumps(rows, indent=1))
    print(f"peer figures: {n_peer}  recall: {found}/{n_peer} = {found / max(n_peer, 1):.3f}")
    print(f"caption match: {cap_ok}/{found} = {cap_ok / max(found, 1):.3f}")
    print(f"crop agreement (peer single-image figures): {agree}/{single} = {agree / max(single, 1):.3f}; "
          f"{multi} figures the peer split into several images not compared")
    print(f"details: {out / 'peer_compare.json'}")


if __name__ == "__main__":
    main()
