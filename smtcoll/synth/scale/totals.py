"""Totals spread early: a one-address Allreduce schedule shortened by forwarding the total as soon as a rank
holds it.

In the checker's model (check/arrival.py) a rank that holds the total (every contribution) may pass it to
any neighbour at any step: the total contains whatever the neighbour holds, so the neighbour takes it (a
copy). A plan placed as soon as possible (`allreduce._asap`) does not do that: a rank waits for its own
plan's copies even when a neighbour on another line already holds the total. This pass replays a schedule
and, per step,
- drops every send into a rank that holds the total (it has nothing left to gain, and a part of the total
  arriving at it would be counted twice);
- adds a send of the total over every link of the topology the step leaves unused, from a rank that holds
  the total to one that does not;
- puts, for each receiver, the arrivals of the total after the others (a part arriving after the total
  would be a double count; the total after a part is a copy).

Why the result is still a valid schedule: by induction over the steps, a rank that does not hold the total
holds what it held in the original schedule, because every send into it that the pass keeps comes from a
rank that either holds what it held in the original (the original arrival) or holds the total (then the
receiver ends with the total). So no rank's value ever grows past the original's except to the total, and
every rank holds the total no later than in the original. The engine checks the result like any other
schedule.

Where it pays: on a torus whose lines run their cycle plans with different rotations, a rank that its own
line serves last is next to a rank of the next line that its line served early (`allreduce.torus_allreduce`).
"""

from __future__ import annotations

from smtcoll.model import Collective, Topology

Steps = list[list[tuple[int, int]]]


def spread_totals(topo: Topology, coll: Collective, steps: Steps) -> Steps | None:
    """The schedule `steps` of a one-address sum with the total forwarded as soon as it is held (module
    docstring); None when the replay finds a double count or some rank never holds the total (the input
    was not a valid Allreduce)."""
    hold = [0] * topo.ranks
    for r, c in coll.pre:
        hold[r] |= 1 << c
    total = 0
    for h in hold:
        total |= h
    free_links = sorted((l.src, l.dst) for l in topo.links
                        if l.bandwidth > 0 and l.src != l.dst and not topo.switches_of(l.src, l.dst))
    out: Steps = []
    t = 0
    while any(h != total for h in hold):
        if t >= len(steps) + topo.ranks:  # past the original, each step reaches one rank more at least
            return None
        snap = list(hold)
        sends = [(u, v) for u, v in (steps[t] if t < len(steps) else []) if snap[v] != total]
        used = set(sends)
        sends += [(u, v) for u, v in free_links if snap[u] == total and snap[v] != total and (u, v) not in used]
        sends.sort(key=lambda s: snap[s[0]] == total)  # stable: the original order, the totals last
        for u, v in sends:
            cur, inc = hold[v], snap[u]
            if inc & cur == cur:
                hold[v] = inc
            elif inc & cur:
                return None
            else:
                hold[v] = cur | inc
        out.append(sends)
        t += 1
    return out
