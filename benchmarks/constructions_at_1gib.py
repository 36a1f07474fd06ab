"""Every throughput construction of a machine at one size, in the sweep's cost model: the rows of
docs/benchmarks.md ("Mixed links: the exact tree packing"). Cheaper than `vs_nccl.py` (no exact search, no
sweep): each construction lowered with the Simple protocol and each instance count, timed as the sweep
times it (`smtcoll.sweep.cost.schedule_time`), against the proved bound (`smtcoll.bounds.throughput`); a program
over the readers' MAX_NODES XML nodes a rank is shown as refused, as the sweep refuses it.

    python benchmarks/constructions_at_1gib.py [--machines mi250,amd8,ndv2:2,a100:2] [--collectives allgather,...]
        [--instances 1,8] [--size BYTES[,BYTES...]] [--only forest,...] [--sweep-bound]

MACHINE:N takes N nodes of the machine (one node without it); MACHINE may be a topology .toml file.
--size takes several sizes (comma-separated): each construction is built once and timed at each.
With --sweep-bound the share is against the sweep's bound (the proved bound plus the model's fixed costs,
`smtcoll.sweep.tasks.model_bound`: the `/ bound` column of vs_nccl.py) instead of the proved bound alone.
"""

from __future__ import annotations

import argparse
import time

from smtcoll import library, specs
from smtcoll.bounds.throughput import time_bound
from smtcoll.check.parse_rules import rank_nodes
from smtcoll.errors import SmtcollError
from smtcoll.lower import LowerOptions, lower
from smtcoll.model import Schedule
from smtcoll.msccl.runtime import MAX_NODES
from smtcoll.sweep.cost import Model, bus_bandwidth, schedule_time
from smtcoll.synth.constructions import constructions


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--machines", default="mi250,amd8")
    ap.add_argument("--collectives", default="allgather,reducescatter,allreduce")
    ap.add_argument("--instances", default="1,8")
    ap.add_argument("--size", default=str(1 << 30), help="bytes, comma-separated for several")
    ap.add_argument("--only", default="", help="construction names to time (default: all)")
    ap.add_argument("--sweep-bound", action="store_true", help="share of the sweep's bound (fixed costs included)")
    args = ap.parse_args()
    model = Model.load()
    sizes = [int(s) for s in args.size.split(",")]
    print("| machine | collective | size | construction | C | steps | instances | bus GB/s | / bound |")
    print("|---|---|---|---|---|---|---|---|---|")
    for spec in args.machines.split(","):
        name, _, count = spec.partition(":")
        nodes = int(count or 1)
        topo = specs.resolve_topology(name, nodes)
        if nodes > 1:
            name = f"{name} x{nodes}"
        for kind in args.collectives.split(","):
            coll = library.collective(kind, topo.ranks)
            start = time.process_time()
            try:
                cons = constructions(topo, coll)
            except SmtcollError as e:
                print(f"<!-- {name} {kind}: no constructions: {e} -->", flush=True)
                continue
            for size in sizes:
                bound = time_bound(topo, coll).busbw_gbps(size)
                if args.sweep_bound:
                    from smtcoll.sweep.tasks import model_bound

                    bound = bus_bandwidth(kind, topo.ranks, size, model_bound(topo, coll, nodes, model)(size))
                for c in cons:
                    if args.only and c.name not in args.only.split(","):
                        continue
                    for inst in map(int, args.instances.split(",")):
                        most = _most_nodes(c.schedule, inst, size)
                        if most > MAX_NODES:  # the sweep never times nor writes it (`sweep.tasks._lowered`)
                            print(f"| {name} | {kind} | {size} | {c.name} | {c.chunks} | {len(c.schedule.steps)} | "
                                  f"{inst} | refused: {most} XML nodes a rank (MAX_NODES {MAX_NODES}) | |")
                            continue
                        try:
                            t = schedule_time(c.schedule, "Simple", inst, size, model, nodes)
                        except SmtcollError as e:  # the runtime's limits (dependency ids, steps per thread block)
                            print(f"| {name} | {kind} | {size} | {c.name} | {c.chunks} | {len(c.schedule.steps)} | "
                                  f"{inst} | not lowerable: {str(e)[:70]} | |")
                            continue
                        bw = bus_bandwidth(kind, topo.ranks, size, t) if t is not None else None
                        share = f"{bw / float(bound):.2f}" if bw is not None and bound else "-"
                        print(f"| {name} | {kind} | {size} | {c.name} | {c.chunks} | {len(c.schedule.steps)} | "
                              f"{inst} | {'-' if bw is None else f'{bw:.1f}'} | {share} |", flush=True)
                print(f"<!-- {name} {kind} {size}: bound {float(bound or 0):.1f} GB/s, "
                      f"{time.process_time() - start:.1f} CPU s so far -->", flush=True)


def _most_nodes(schedule: Schedule, instances: int, size: int) -> int:
    """The most XML nodes a rank of the program lowered as `schedule_time` lowers it (0 where it cannot be)."""
    try:
        program = lower(schedule, LowerOptions(instances, "Simple", "executor", "outofplace", size, size, True)).program
    except SmtcollError:
        return 0
    return max(rank_nodes(program, g) for g in program.gpus)


if __name__ == "__main__":
    main()
