"""Does one rank gather every contribution in the rounds the reach recursion allows it? (session 17)

For a machine of nodes and each rank v of its first node (the nodes are copies), build a Reduce to v in
`Tables.gathered(v)` rounds (the least t with L_v(t) >= N: no Reduce to v is faster) and check it with the
checker. Where every rank's Reduce is found, no bound that reasons about what one rank can gather (the reach and
rails recursions, the holdings ramp, per-rank tables, disjointness inside one rank's tree) can prove more rounds
for the one-chunk Allreduce: a stronger Allreduce bound has to use that every rank gathers at once.

The Reduce is a broadcast from v run backwards: the ranks informed k rounds before the end send in round t - k + 1
to the rank that informed them. Each round every informed rank informs its uninformed neighbours inside its node
(one value per link), and over its NIC one remote rank: the one whose ball inside its node, within the rounds left,
holds the most ranks not yet informed or claimed (a maximum bipartite matching in the last round). Ties and the
order of the senders are broken by a seeded random order, tried for seeds 0..SEEDS-1 (deterministic).

    python benchmarks/gather_trees.py mi250 4,10,11,12,13,14,15 [--seeds 200]

Prints, per node count, t per rank and whether the checker accepted each Reduce, and the CPU seconds.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import networkx as nx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from smtcoll import library
from smtcoll.bounds.entry import node_of
from smtcoll.bounds.reach import reach_tables
from smtcoll.check.schedule import check_schedule
from smtcoll.model import Schedule, Send, Step, Topology


def reduce_tree(topo: Topology, root: int, t: int, seed: int = 0) -> list[Step] | None:
    """A Reduce to `root` in t one-round steps (sends of address 0), or None where this try falls short."""
    nodes = node_of(topo)
    assert nodes is not None
    n = topo.ranks
    rng = random.Random(seed)
    local: dict[int, set[int]] = {v: set() for v in range(n)}  # rank -> ranks that may send to it inside its node
    remote: dict[int, set[int]] = {v: set() for v in range(n)}
    for link in topo.links:
        if link.bandwidth > 0 and link.src != link.dst:
            (local if nodes[link.src] == nodes[link.dst] else remote)[link.dst].add(link.src)

    def ball(y: int, d: int, free: set[int]) -> set[int]:
        seen, front = {y}, {y}
        for _ in range(d):
            front = {z for x in front for z in local[x] if z not in seen and z in free}
            seen |= front
        return seen

    top = {root: t}  # rank -> the round after which it sends (its value's top round)
    parent: dict[int, int] = {}
    for k in range(1, t + 1):
        now = t - k
        senders = sorted(top)
        free = set(range(n)) - set(top)
        new: dict[int, int] = {}
        for x in senders:
            for z in sorted(local[x]):
                if z in free and z not in new:
                    new[z] = x
        free -= set(new)
        if now == 0:  # the last round: any free remote rank will do
            g = nx.Graph()
            left = [("s", x) for x in senders]
            g.add_nodes_from(left)
            g.add_edges_from((("s", x), ("f", z)) for x in senders for z in sorted(remote[x]) if z in free)
            match = nx.bipartite.maximum_matching(g, top_nodes=left)
            new.update({match[("s", x)][1]: x for x in senders if ("s", x) in match})
        else:
            claimed: set[int] = set()
            order = senders[:]
            if seed:
                rng.shuffle(order)
            for x in order:
                cands = [z for z in remote[x] if z in free]
                if not cands:
                    continue
                avail = free - claimed
                best = max(cands, key=lambda z: (len(ball(z, now, avail)),
                                                 sum(1 for y in avail if nodes[y] == nodes[z]),
                                                 rng.random() if seed else -z))
                new[best] = x
                free.discard(best)
                claimed |= ball(best, now, free - claimed)
        for z, x in new.items():
            top[z] = now
            parent[z] = x
    if len(top) < n:
        return None
    return [Step(1, [Send(0, z, parent[z]) for z in sorted(parent) if top[z] == r - 1]) for r in range(1, t + 1)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("machine")
    ap.add_argument("nodes", help="node counts, comma-separated")
    ap.add_argument("--seeds", type=int, default=200)
    args = ap.parse_args()
    for count in (int(x) for x in args.nodes.split(",")):
        start = time.process_time()
        topo = library.topology(args.machine, count)
        tables = reach_tables(topo, library.collective("allreduce", topo.ranks))
        if isinstance(tables, str):
            print(f"{args.machine} x {count}: {tables}")
            continue
        per_node = topo.ranks // count
        rows = []
        for v in range(per_node):
            t = tables.gathered(v)
            steps = next((s for seed in range(args.seeds) if (s := reduce_tree(topo, v, t, seed)) is not None), None)
            if steps is None:
                rows.append(f"{v}:{t}:short")
                continue
            report = check_schedule(Schedule(topo, library.collective("reduce", topo.ranks, root=v), steps))
            rows.append(f"{v}:{t}:{'ok' if report.verdict == 'ok' else 'REFUSED'}")
        cpu = time.process_time() - start
        print(f"{args.machine} x {count} (reach bound {tables.t}): rank:rounds:Reduce {' '.join(rows)}"
              f"  ({cpu:.1f} CPU s)")


if __name__ == "__main__":
    main()
