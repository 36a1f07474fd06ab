"""The exact tree packing beyond one node's links: the links a packing may use, and integer capacities
on them, when a machine has NIC switch groups or more ranks than `forest.MAX_RANKS`.

A switch group bounds a NIC's traffic, not a link's, so the branching theorem does not cover it. Each NIC
gets lanes instead, as `rail` chooses them: from every sender to the receiver of the same local rank in each
other node (else a receiver no other sender uses), each lane with the share of its groups' speed that the
groups' lanes split evenly (on two nodes a lane is a whole NIC). The lanes' speeds respect every group, so
trees on these links respect the machine; on mi250 x2 the cut bound is the same (the busiest cut is a pair
of ranks inside a node).

Capacities are whole units of a speed `unit`, rounded down: a coarser unit loses a little of each link's
speed but needs fewer trees and fewer messages per link (the lowering's limits), so `forest.choose_wide`
tries a few and keeps the one whose packing comes nearest the bound.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from fractions import Fraction

from smtcoll.bounds.throughput import rates
from smtcoll.model import Send, Step, Topology
from smtcoll.synth.constructions import rings as ringlib
from smtcoll.synth.constructions.common import NotApplicable
from smtcoll.synth.constructions.pipeline import Plan

Rates = dict[tuple[int, int], Fraction]
STEPS = 8  # units tried per link speed: speed / 1 .. speed / STEPS


def lane_rates(topo: Topology) -> Rates:
    """Each usable link's speed (bytes per µs): every link outside switch groups, and one lane per NIC and
    other node across them."""
    r = rates(topo)
    speed = {(l.src, l.dst): r.link[e] for e, l in enumerate(topo.links)}
    covered = {e for ms in r.members for e in ms}
    if not covered:
        return speed
    node = ringlib.nodes_of(topo)
    keys = [(l.src, l.dst) for l in topo.links]
    index = {k: e for e, k in enumerate(keys)}
    if any(node[keys[e][0]] == node[keys[e][1]] for e in covered):
        raise NotApplicable("switch groups inside a node bound traffic beyond single links (use treepack)")
    first: dict[int, int] = {}
    for v, i in enumerate(node):
        first.setdefault(i, v)
    local = [v - first[node[v]] for v in range(topo.ranks)]
    across: dict[tuple[int, int], dict[int, list[int]]] = {}
    for e in sorted(covered, key=lambda e: keys[e]):
        s, d = keys[e]
        across.setdefault((node[s], node[d]), {}).setdefault(s, []).append(d)
    chosen: list[tuple[int, int]] = []
    for (_, _), senders in sorted(across.items()):
        used: set[int] = set()
        for s, dsts in sorted(senders.items()):
            same = [d for d in dsts if local[d] == local[s]]
            free = [d for d in sorted(dsts) if d not in used]
            d = same[0] if same else (free[0] if free else min(dsts))
            used.add(d)
            chosen.append((s, d))
    lanes_in = [sum(1 for k in chosen if index[k] in ms) for ms in r.members]
    out = {k: v for k, v in speed.items() if index[k] not in covered}
    for k in chosen:
        e = index[k]
        share = [r.group[g] / lanes_in[g] for g, ms in enumerate(r.members) if e in ms]
        out[k] = min([speed[k], *share])
    return dict(sorted(out.items()))


def whole(speed: Rates, unit: Fraction) -> dict[tuple[int, int], int]:
    """Capacities in whole units, rounded down; links of less than a unit are left out."""
    out = {k: math.floor(v / unit) for k, v in speed.items()}
    return {k: v for k, v in out.items() if v > 0}


def exact_unit(speed: Rates) -> Fraction:
    """The greatest unit that divides every speed: capacities without rounding."""
    den = math.lcm(*(x.denominator for x in speed.values()))
    return Fraction(math.gcd(*(int(x * den) for x in speed.values())), den)


def candidate_units(speed: Rates) -> list[Fraction]:
    """Units to try, largest first: each speed over 1..STEPS, no larger than the slowest link (so that no
    link is left out), and the exact unit."""
    slowest = min(speed.values())
    found = {v / k for v in set(speed.values()) for k in range(1, STEPS + 1)}
    found.add(exact_unit(speed))
    return sorted((u for u in found if u <= slowest), reverse=True)


def reverse(cap: dict[tuple[int, int], int]) -> dict[tuple[int, int], int]:
    return dict(sorted(((v, u), c) for (u, v), c in cap.items()))


def timed_steps(speed: Topology, plan: Plan, order: Sequence[int]) -> list[Step]:
    """A list schedule in time, not rounds: each transfer, in `order` (dependencies first), takes
    1 / bandwidth of `speed` on its link, one after another, in the earliest gap after its dependencies
    arrived (and after the rank's earlier sends into the sender ended, as `pipeline.link_time` times it).
    The steps follow the start times: a transfer one step after its dependencies' and no earlier than
    the link's transfer before it, so that the runtime sends a connection's chunks in that order.

    The round-based list schedule counts a NIC of 1 unit as 1 chunk a round and 4 xGMI lanes as 12, each
    chunk a round long; here a chunk on 12 units takes a twelfth (mi250 x2 Allgather in the sweep's model,
    8 instances at 1 GiB: 0.85 of the bound, the round-based schedule of the same trees 0.84, on the
    machine's own lanes 0.65)."""
    busy: dict[tuple[int, int], list[tuple[Fraction, Fraction]]] = {}
    start: dict[int, Fraction] = {}
    done: dict[int, Fraction] = {}
    for i in order:
        t = plan.transfers[i]
        key = (t.src, t.dst)
        length = Fraction(1, speed.bandwidth(*key))
        ready = max((done[d] for d in t.after), default=Fraction(0))
        slots = busy.setdefault(key, [])
        at = ready
        k = bisect.bisect_left(slots, (ready, Fraction(0)))
        if k > 0 and slots[k - 1][1] > at:
            at = slots[k - 1][1]
        while k < len(slots) and slots[k][0] < at + length:
            at = max(at, slots[k][1])
            k += 1
        slots.insert(k, (at, at + length))
        start[i], done[i] = at, at + length
    step: dict[int, int] = {}
    last: dict[tuple[int, int], int] = {}
    for i in sorted(start, key=lambda i: (start[i], i)):
        t = plan.transfers[i]
        key = (t.src, t.dst)
        step[i] = max([last.get(key, 0), *(step[d] + 1 for d in t.after)])
        last[key] = step[i]
    per_step: list[list[Send]] = [[] for _ in range(max(step.values(), default=-1) + 1)]
    for i in sorted(step, key=lambda i: (start[i], i)):
        t = plan.transfers[i]
        per_step[step[i]].append(Send(t.chunk, t.src, t.dst))
    return [Step(1, sends) for sends in per_step if sends]
