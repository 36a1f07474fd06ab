"""Alltoall on the built-in machines in the sweep's cost model: the LP-routed pairwise exchange
(`--method exchange`) against NCCL's all-pairs sends (`--method direct`, its p2p Alltoall) and the proved
throughput bound, at 256 MiB and 1 GiB, Simple protocol, per instance count; CPU seconds of building (LP,
paths, list schedule, checker) and of timing each lowered program.

    python benchmarks/alltoall.py [--machines a100:1,dgx2:1,a100:2] [--instances 1,2] [--model FILE]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from smtcoll import library
from smtcoll.bounds.throughput import time_bound
from smtcoll.sweep.cost import Model, bus_bandwidth, schedule_time
from smtcoll.synth.constructions import build

SIZES = {"256MiB": 1 << 28, "1GiB": 1 << 30}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--machines", default="a100:1,dgx2:1,a100:2,mi250:1,dgx1:1")
    ap.add_argument("--instances", default="1,2")
    ap.add_argument("--model", default=None)
    args = ap.parse_args()
    model = Model.load(Path(args.model) if args.model else None)
    print("| machine | method | C | size | instances | bus GB/s | bound GB/s | share | build CPU s | timing CPU s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for item in args.machines.split(","):
        name, nodes = item.split(":")
        topo = library.topology(name, int(nodes))
        coll = library.collective("alltoall", topo.ranks)
        tb = time_bound(topo, coll)
        for method in ("exchange", "direct"):
            t0 = time.process_time()
            s = build(method, topo, coll)
            built = time.process_time() - t0
            for label, size in SIZES.items():
                bound = bus_bandwidth("alltoall", topo.ranks, size, tb.us_per_byte * size) or 0.0
                for inst in map(int, args.instances.split(",")):
                    t0 = time.process_time()
                    t = schedule_time(s, "Simple", inst, size, model, int(nodes))
                    spent = time.process_time() - t0
                    bw = bus_bandwidth("alltoall", topo.ranks, size, t) if t is not None else None
                    shown = f"{bw:.1f}" if bw is not None else "cannot lower"
                    share = f"{bw / bound:.2f}" if bw is not None and bound else "-"
                    print(f"| {name} x{nodes} | {method} | {s.collective.chunk_factor} | {label} | {inst} | {shown} "
                          f"| {bound:.1f} | {share} | {built:.1f} | {spent:.1f} |", flush=True)


if __name__ == "__main__":
    main()
