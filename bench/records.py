#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Records for make bench rows 11 and 12, made from tests/golden/assembled.json.

  records.py big OUT MB     one record of about MB megabytes (many transitions,
                            samples and states, as a long session has)
  records.py runs DIR N     N records a side in DIR/base and DIR/cand, the
                            wall and stage times jittered by a fixed PRNG
"""
import copy
import json
import os
import random
import sys

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "tests", "golden", "assembled.json")


def big(out, mb):
    d = json.load(open(GOLDEN))
    t, rs, st = d["transitions"], d["resource_samples"], d["states"]
    # About 550 bytes of pretty JSON per transition, sample and state.
    n = max(2, int(mb * 1e6 / 550))
    d["transitions"] = [{"state": t[i % len(t)]["state"], "elapsed_ns": i * 1000} for i in range(n)]
    d["resource_samples"] = []
    for i in range(n):
        r = copy.deepcopy(rs[i % len(rs)])
        r["elapsed_ns"] = i * 1000
        d["resource_samples"].append(r)
    d["states"] = [copy.deepcopy(st[i % len(st)]) for i in range(n - 1)]
    d["khprof"]["samples"] = []
    with open(out, "w") as f:
        f.write(json.dumps(d, indent=2) + "\n")


def runs(out, n):
    rnd = random.Random(1)
    d = json.load(open(GOLDEN))
    d["khprof"]["drops"] = {k: 0 for k in d["khprof"]["drops"]}
    for side in ("base", "cand"):
        os.makedirs(os.path.join(out, side), exist_ok=True)
        for i in range(n):
            e = copy.deepcopy(d)
            e["wall_time_ns"] = int(d["wall_time_ns"] * rnd.uniform(0.95, 1.05))
            for s in e["stages"]:
                s["elapsed_ns"] = int(s["elapsed_ns"] * rnd.uniform(0.95, 1.05))
            with open(os.path.join(out, side, "run-%05d.json" % (i + 1)), "w") as f:
                f.write(json.dumps(e, indent=2) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("big", "runs"):
        sys.exit(__doc__)
    (big if sys.argv[1] == "big" else runs)(sys.argv[2], float(sys.argv[3]) if sys.argv[1] == "big" else int(sys.argv[3]))
