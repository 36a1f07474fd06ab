"""The greedy's two candidate orders (smtcoll.synth.greedy) side by side: steps of each, every schedule
checked, and the CPU seconds of each order over the whole set. The engine runs both up to
FARTHEST_UP_TO ranks and keeps the better; this is the measurement behind keeping both.

    python benchmarks/greedy_orders.py [--max-ranks 32]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from smtcoll import library
from smtcoll.check.schedule import check_schedule
from smtcoll.synth.greedy import Order, greedy_schedule

TOPOLOGIES: list[tuple[str, int]] = [
    (t, 1) for t in ("ring:4", "ring:5", "ring:8", "ring:16", "line:4", "line:8", "star:4", "star:8",
                     "hub-and-spoke:8", "dgx1", "dgx2", "amd8", "fully-connected:8", "fully-connected:16",
                     "torus2d:3x3", "torus2d:4x4", "torus2d:5x5", "torus2d:6x6", "torus2d:4x8", "mesh2d:4x4",
                     "hypercube:2", "hypercube:3", "hypercube:4", "hypercube:5", "a100", "mi250", "ndv2")
] + [("a100", 2), ("ndv2", 2)]
# (collective, root, chunks per input)
COLLECTIVES = [("allgather", None, 1), ("alltoall", None, 1), ("broadcast", 1, 1), ("scatter", 0, 1),
               ("gather", 3, 1), ("allgather", None, 4), ("alltoall", None, 3)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-ranks", type=int, default=32)
    args = ap.parse_args()
    cpu = {"farthest": 0.0, "links": 0.0}
    wins = {"farthest": 0, "links": 0}
    for name, nodes in TOPOLOGIES:
        topo = library.topology(name, nodes)
        if topo.ranks > args.max_ranks:
            continue
        for kind, root, chunks in COLLECTIVES:
            coll = library.collective(kind, topo.ranks, root)
            coll = coll.with_chunks(chunks) if chunks != 1 else coll
            steps: dict[str, int | None] = {}
            orders: tuple[Order, ...] = ("farthest", "links")
            for order in orders:
                t0 = time.process_time()
                s = greedy_schedule(topo, coll, 4 * topo.ranks + 40, order=order)
                cpu[order] += time.process_time() - t0
                assert s is None or check_schedule(s).verdict == "ok"
                steps[order] = None if s is None else len(s.steps)
            f, l = steps["farthest"], steps["links"]
            better = ""
            if f is not None and (l is None or f < l):
                wins["farthest"] += 1
                better = "farthest"
            elif l is not None and (f is None or l < f):
                wins["links"] += 1
                better = "links"
            label = name if nodes == 1 else f"{name} x{nodes}"
            print(f"{label:20} {kind:10} C={chunks}  farthest {f}  links {l}  {better}", flush=True)
    print(f"fewer steps: farthest {wins['farthest']}, links {wins['links']}; CPU s: "
          f"farthest {cpu['farthest']:.1f}, links {cpu['links']:.1f}")


if __name__ == "__main__":
    main()
