"""Stage 3, simulation: every send becomes a transfer that copies, adds (`rrc`) or replaces (`r`) at the
receiver, simulated as the checker does; sends whose result is never observed are dropped."""

from __future__ import annotations

from collections import defaultdict

from smtcoll.check.arrival import EMPTY, arrive
from smtcoll.lower.ops import Transfer
from smtcoll.model import Schedule


def transfers(schedule: Schedule) -> list[Transfer]:
    """The sends with an observable effect, with what the receiver does, in step and send order."""
    coll = schedule.collective
    combining = coll.is_combining
    value: dict[tuple[int, int], frozenset[int]] = {}
    for r, c in coll.pre:
        key = (r, coll.address[c])
        value[key] = value.get(key, frozenset()) | {c}
    out: list[Transfer] = []
    for t, step in enumerate(schedule.steps):
        arrivals: list[tuple[int, int, int, int, frozenset[int]]] = []
        for j, s in enumerate(step.sends):
            arrivals.append((j, s.chunk, s.src, s.dst, value[(s.src, s.chunk)]))
        for j, a, src, dst, v in arrivals:
            current = value.get((dst, a), EMPTY)
            if v == current or (not combining and current):
                continue  # nothing changes at the receiver
            # the checker's arrival rule; no double count here: check_schedule has excluded them
            new, _ = arrive(combining, current, v)
            action = "copy" if not combining else "replace" if new == v else "add"
            value[(dst, a)] = new
            out.append(Transfer(t, j, a, src, dst, action))
    return _live(schedule, out)


def _live(schedule: Schedule, items: list[Transfer]) -> list[Transfer]:
    """Drop transfers whose result no later kept send and no postcondition reads (backwards liveness)."""
    coll = schedule.collective
    live = {(r, coll.address[c]) for r, c in coll.post}
    kept: list[Transfer] = []
    by_step: dict[int, list[Transfer]] = defaultdict(list)
    for x in items:
        by_step[x.step].append(x)
    for t in sorted(by_step, reverse=True):
        now = [x for x in by_step[t] if (x.dst, x.addr) in live]
        live |= {(x.src, x.addr) for x in now}
        kept.extend(reversed(now))
    kept.reverse()
    return kept
