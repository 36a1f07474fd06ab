"""Two-level fat trees written link by link (session 18): `pairwise`'s rails as a ring of the nodes against the
proved bound, in the sweep's cost model at 1 GiB (Simple, 1 or 2 instances), and NCCL's rings.

A machine: N nodes of P GPUs (a switch inside, 8 units of 25 GB/s a GPU), a 25 GB/s NIC per GPU linked to every
GPU of the other nodes (`nic...` groups, so the nodes are known: docs/specs.md), L leaves of N / L nodes, each
leaf U units of 25 GB/s up and down. `--interleave` puts node b on leaf b mod L (the leaves do not hold
consecutive nodes: the ring of the nodes must go round in leaf order, `rings.node_order`).

    python benchmarks/fat_trees.py --machines 8x4/2/8,6x4/3/4 [--interleave] [--collectives allgather,allreduce]
"""

from __future__ import annotations

import argparse
import time

from smtcoll import library
from smtcoll.bounds.throughput import time_bound
from smtcoll.model import Link, SwitchGroup, Topology
from smtcoll.sweep.cost import Model, schedule_time
from smtcoll.sweep.tasks import model_bound
from smtcoll.synth.constructions import build, checked
from smtcoll.synth.constructions import rings as ringlib
from smtcoll.synth.constructions.pairwise import pairwise

GIB = 1 << 30


def fat_tree(n: int, p: int, leaves: int, up: int, interleave: bool = False) -> Topology:
    ranks = n * p
    links = [Link(u, v, 8 if u // p == v // p else 1) for u in range(ranks) for v in range(ranks) if u != v]
    groups = []
    for u in range(ranks):
        inside = [v for v in range(ranks) if v // p == u // p and v != u]
        outside = [v for v in range(ranks) if v // p != u // p]
        groups += [SwitchGroup([u], inside, 8, f"nvout{u}"), SwitchGroup(inside, [u], 8, f"nvin{u}"),
                   SwitchGroup([u], outside, 1, f"nicout{u}"), SwitchGroup(outside, [u], 1, f"nicin{u}")]
    per = n // leaves
    leaf = [b % leaves if interleave else b // per for b in range(n)]
    for x in range(leaves):
        mine = [r for r in range(ranks) if leaf[r // p] == x]
        rest = [r for r in range(ranks) if leaf[r // p] != x]
        groups += [SwitchGroup(mine, rest, up, f"leaf{x}up"), SwitchGroup(rest, mine, up, f"leaf{x}down")]
    return Topology(f"fattree{n}x{p}-{leaves}leaves", ranks, links, groups)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--machines", default="8x4/2/8,6x4/3/4", help="NxP/L/U,... (nodes x GPUs / leaves / uplinks)")
    ap.add_argument("--interleave", action="store_true")
    ap.add_argument("--collectives", default="allgather,reducescatter,allreduce")
    args = ap.parse_args()
    model = Model.load()
    for spec in args.machines.split(","):
        shape, leaves, up = spec.split("/")
        n, p = (int(x) for x in shape.split("x"))
        topo = fat_tree(n, p, int(leaves), int(up), args.interleave)
        order = ringlib.node_order(topo, ringlib.nodes_of(topo))
        print(f"{topo.name}{' interleaved' if args.interleave else ''}: {topo.node_count} nodes, ring order {order}")
        for kind in args.collectives.split(","):
            t0 = time.process_time()
            coll = library.collective(kind, topo.ranks)
            bound = model_bound(topo, coll, 1, model)(GIB)
            ring = checked(pairwise(topo, coll, planes=True, ring=True), "pairwise")
            direct = checked(pairwise(topo, coll, planes=True), "pairwise")
            nccl = build("ring", topo, coll)

            def best(s: object, bound: object = bound) -> float:
                times = [schedule_time(s, "Simple", i, GIB, model) for i in (1, 2)]  # type: ignore[arg-type]
                return float(bound / min(t for t in times if t is not None))  # type: ignore[operator]

            print(f"  {kind:13s} bound: {time_bound(topo, coll).witness}")
            print(f"  {'':13s} of the bound at 1 GiB: ring of the nodes {best(ring):.3f}, direct rails "
                  f"{best(direct):.3f}, NCCL's {len(ringlib.find_rings(topo, per_link=4))} rings {best(nccl):.3f} "
                  f"({time.process_time() - t0:.1f} CPU s)")


if __name__ == "__main__":
    main()
