"""Combining collectives through their non-combining duals, and Allreduce as ReduceScatter + Allgather.

Dual: when every address has one destination that needs all its contributions (Reduce: the root;
ReduceScatter: rank d for its addresses) and every contribution starts at one rank, the time-reversal of
a *tree-shaped* broadcast of the address from its destination to its contributors on the reversed
topology is a reduction: a rank that received the chunk once sends its partial sum once, after all of
its children did. Bandwidth carries over (link u -> v of the reversed topology is v -> u here).

The dual covers tree-shaped reductions only, so an UNSAT from it proves nothing about all schedules; the
strategies use it to find schedules fast and let the exact direct encoding decide infeasibility.
"""

from __future__ import annotations

from smtcoll.model import Collective, Schedule, Send, Step, Topology


def dual_collective(coll: Collective) -> tuple[Collective, tuple[int, ...]] | None:
    """The non-combining dual (chunk i = the i-th address; pre = its destination, post = its
    contributors) and the address of each dual chunk; None when the collective has no such dual."""
    if not coll.is_combining:
        return None
    addresses = coll.addresses
    pre: list[tuple[int, int]] = []
    post: list[tuple[int, int]] = []
    for i, a in enumerate(addresses):
        dests = [r for r in range(coll.ranks) if any(c in coll.post_sets[r] for c in coll.contributions[a])]
        if len(dests) != 1:
            return None
        d = dests[0]
        if {c for c in coll.post_sets[d] if coll.address[c] == a} != set(coll.contributions[a]):
            return None
        owners = []
        for c in coll.contributions[a]:
            holders = [r for r in range(coll.ranks) if c in coll.pre_sets[r]]
            if len(holders) != 1:
                return None
            owners.append(holders[0])
        if len(set(owners)) != len(owners):
            return None  # two contributions of one rank would be summed locally: not this model
        pre.append((d, i))
        post.extend((r, i) for r in owners)
    dual = Collective(f"{coll.name}-dual", coll.ranks, len(addresses), pre, post, range(len(addresses)),
                      chunk_factor=coll.chunk_factor)
    return dual, addresses


def reverse_schedule(dual_schedule: Schedule, topo: Topology, coll: Collective,
                     addresses: tuple[int, ...]) -> Schedule:
    """Turn a tree-shaped broadcast of the dual (on the reversed topology) into the reduction: steps in
    reverse order, every send turned around, sends of ranks that would send nothing (relays that had
    nothing below them) dropped."""
    steps: list[tuple[int, list[Send]]] = []
    for step in reversed(dual_schedule.steps):
        steps.append((step.rounds, [Send(addresses[s.chunk], s.dst, s.src) for s in step.sends]))
    # drop sends from ranks that hold no contribution of the address at that time
    held: set[tuple[int, int]] = {(r, coll.address[c]) for r, c in coll.pre}
    out = []
    for rounds, sends in steps:
        kept = sorted((s for s in sends if (s.src, s.chunk) in held), key=lambda s: (s.chunk, s.src, s.dst))
        held |= {(s.dst, s.chunk) for s in kept}
        out.append(Step(rounds, kept))
    return Schedule(topo, coll, out)


def compose(first: Schedule, second: Schedule, coll: Collective) -> Schedule:
    """ReduceScatter then Allgather as one schedule of `coll` (the addresses of the three collectives
    coincide: address d*k + j of ReduceScatter/Allgather with k chunks is address d*k + j of Allreduce
    with ranks*k chunks)."""
    return Schedule(first.topology, coll, [*first.steps, *second.steps])
