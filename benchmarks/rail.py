"""The multi-rail construction (`synth --method rail`) against NCCL's ring and the proved throughput bound, at
one size, in the sweep's cost model (docs/benchmarks.md, "The multi-rail construction").

    python benchmarks/rail.py [--size BYTES] [--model FILE] [MACHINE:NODES ...]

Per machine, node count and collective: the bus bandwidth (GB/s) of `rail` and of NCCL's ring (`nccl.ring`),
each the best of the Simple protocol with 1 and 8 instances (lowered as the sweep lowers them), the tight
throughput bound (`smtcoll.bounds.throughput.time_bound`) and rail's share of it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from smtcoll import library
from smtcoll.bounds.throughput import time_bound
from smtcoll.lower.options import CannotLower
from smtcoll.sweep.cost import Model, bus_bandwidth, schedule_time
from smtcoll.synth.constructions import build

REPO = Path(__file__).resolve().parents[1]
DEFAULT = ("dgx2:2", "a100:2", "ndv2:2", "dgx2:3", "a100:3")
KINDS = ("allgather", "reducescatter", "allreduce")


def best(schedule, kind: str, size: int, model: Model, nodes: int) -> float:
    out = 0.0
    for inst in (1, 8):
        try:
            t = schedule_time(schedule, "Simple", inst, size, model, nodes)
        except CannotLower:
            continue
        if t is not None:
            out = max(out, bus_bandwidth(kind, schedule.topology.ranks, size, t) or 0.0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("machines", nargs="*", default=list(DEFAULT))
    ap.add_argument("--size", type=int, default=1 << 30)
    ap.add_argument("--model", type=Path, default=REPO / "benchmarks" / "vs_nccl.toml")
    args = ap.parse_args()
    model = Model.load(args.model)
    print("| machine | collective | rail busbw GB/s | NCCL ring | bound | rail / ring | rail / bound |")
    print("|---|---|---|---|---|---|---|")
    for spec in args.machines:
        name, nodes = spec.split(":")
        topo = library.topology(name, int(nodes))
        for kind in KINDS:
            coll = library.collective(kind, topo.ranks)
            rail = best(build("rail", topo, coll), kind, args.size, model, int(nodes))
            ring = best(build("ring", topo, coll), kind, args.size, model, int(nodes))
            bound = bus_bandwidth(kind, topo.ranks, args.size,
                                  time_bound(topo, coll, float(model.default_gbps),
                                             float(model.default_alpha_us)).at(args.size)) or 0.0
            print(f"| {name} x{nodes} | {kind} | {rail:.1f} | {ring:.1f} | {bound:.1f} | {rail / ring:.2f} | "
                  f"{rail / bound:.2f} |", flush=True)


if __name__ == "__main__":
    main()
