"""Query-sized model passes with spinning (`active`) and passive OpenMP waiting, alternately.

Each policy runs in a fresh process (the OpenMP runtime reads it once, when PyTorch loads):
a MobileNetV2 pass over one 320 x 320 crop and a MiniLM encoding of one short query, each timed
over `--repeats` calls after a warm-up. Run it while the machine is busy and while it is idle.

    python scripts/omp_wait_ab.py --rounds 2 --repeats 5
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import json, sys, time
import numpy as np
from app.search.encoder import TextEncoder
from app.vision.backbone import backbone
repeats = int(sys.argv[1])
net, crop = backbone(), np.full((1, 320, 320, 3), 255, np.uint8)
net.features_of_arrays(crop)
t = time.perf_counter()
for _ in range(repeats):
    net.features_of_arrays(crop)
crop_ms = (time.perf_counter() - t) / repeats * 1000
enc = TextEncoder()
enc.encode(["warm up"])
t = time.perf_counter()
for i in range(repeats):
    enc.encode([f"attention heatmap of layer {i}"])
query_ms = (time.perf_counter() - t) / repeats * 1000
print(json.dumps({"crop_ms": round(crop_ms, 1), "query_ms": round(query_ms, 1)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    for r in range(args.rounds):
        for policy in ("ACTIVE", "PASSIVE"):
            env = {**os.environ, "OMP_WAIT_POLICY": policy, "HF_HUB_OFFLINE": "1"}
            out = subprocess.run([sys.executable, "-c", PROBE, str(args.repeats)], cwd=ROOT, env=env,
                                 capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
            print(json.dumps({"round": r, "policy": policy, "load": round(os.getloadavg()[0], 2), **json.loads(out)}))


if __name__ == "__main__":
    main()
