"""Random tiny instances and schedules for the encoder's round-trip tests and the bounds' soundness tests.

`accepted_schedule` builds a schedule the checker accepts by construction: it simulates holdings,
sends only held addresses over existing links, gives each step the rounds its load needs, and picks
the postcondition among what ranks hold at the end.
"""

from __future__ import annotations

import itertools
from collections import Counter

from hypothesis import strategies as st

from smtcoll.model import Collective, Link, Schedule, Send, Step, SwitchGroup, Topology


@st.composite
def topologies(draw, max_ranks: int = 4) -> Topology:
    n = draw(st.integers(2, max_ranks))
    pairs = [(s, d) for s in range(n) for d in range(n) if s != d]
    chosen = draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=len(pairs), unique=True))
    links = [Link(s, d, draw(st.integers(1, 2))) for s, d in sorted(chosen)]
    groups = []
    if draw(st.booleans()):
        srcs = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
        dsts = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
        groups.append(SwitchGroup(sorted(srcs), sorted(dsts), draw(st.integers(1, 2)), "g"))
    return Topology("random", n, links, groups)


@st.composite
def starts(draw, n: int, max_chunks: int = 3) -> list[tuple[int, int]]:
    k = draw(st.integers(1, max_chunks))
    pre = []
    for c in range(k):
        for r in draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=2, unique=True)):
            pre.append((r, c))
    return pre


def rounds_needed(topo: Topology, sends: list[Send]) -> int:
    load = Counter((s.src, s.dst) for s in sends)
    need = [-(-k // topo.bandwidth(a, b)) for (a, b), k in load.items()]
    need += [-(-sum(k for (a, b), k in load.items() if a in g.srcs and b in g.dsts) // g.bandwidth)
             for g in topo.switches]
    return max([1, *need])


@st.composite
def accepted_schedules(draw, max_ranks: int = 4, max_steps: int = 3) -> Schedule:
    topo = draw(topologies(max_ranks))
    pre = draw(starts(topo.ranks))
    chunks = 1 + max(c for _, c in pre)
    held = set(pre)
    steps = []
    for _ in range(draw(st.integers(1, max_steps))):
        possible = sorted(Send(c, l.src, l.dst) for l in topo.links for (r, c) in held if r == l.src)
        sends = draw(st.lists(st.sampled_from(possible), unique=True)) if possible else []
        steps.append(Step(rounds_needed(topo, sends) + draw(st.integers(0, 1)), sorted(sends)))
        held |= {(s.dst, s.chunk) for s in sends}
    post = draw(st.lists(st.sampled_from(sorted(held)), min_size=1, unique=True))
    coll = Collective("random", topo.ranks, chunks, pre, post, list(range(chunks)))
    return Schedule(topo, coll, steps, "random")


@st.composite
def mutated(draw, schedule: Schedule) -> Schedule:
    """The schedule with one change that may break it: a send dropped or added, or a step's rounds cut."""
    steps = [list(s.sends) for s in schedule.steps]
    rounds = [s.rounds for s in schedule.steps]
    i = draw(st.integers(0, len(steps) - 1))
    kind = draw(st.sampled_from(["drop", "add", "rounds"]))
    if kind == "drop" and steps[i]:
        steps[i].pop(draw(st.integers(0, len(steps[i]) - 1)))
    elif kind == "add":
        topo, coll = schedule.topology, schedule.collective
        extra = [Send(c, l.src, l.dst) for l in topo.links for c in range(coll.chunks)
                 if Send(c, l.src, l.dst) not in steps[i]]
        if extra:
            steps[i].append(draw(st.sampled_from(extra)))
    elif rounds[i] > 1:
        rounds[i] -= 1
    return Schedule(schedule.topology, schedule.collective,
                    [Step(r, sorted(s)) for r, s in zip(rounds, steps, strict=True)], "mutated")


def all_schedules(topo: Topology, coll: Collective, steps: int, rounds: int):
    """Every schedule (one round budget per step, the fewest its load needs) with at most `steps` steps,
    at most `rounds` rounds in total, sends of held addresses only: a brute-force enumerator."""
    def go(held: frozenset, left_steps: int, left_rounds: int, prefix: list[Step]):
        yield prefix
        if left_steps == 0:
            return
        possible = sorted(Send(c, l.src, l.dst) for l in topo.links for (r, c) in held if r == l.src)
        for k in range(1, len(possible) + 1):
            for sends in itertools.combinations(possible, k):
                need = rounds_needed(topo, list(sends))
                if need > left_rounds:
                    continue
                nxt = held | {(s.dst, s.chunk) for s in sends}
                yield from go(frozenset(nxt), left_steps - 1, left_rounds - need, [*prefix, Step(need, sends)])
    for prefix in go(frozenset(coll.pre), steps, rounds, []):
        yield Schedule(topo, coll, prefix, "enumerated")


# --- combining collectives ------------------------------------------------------------------------

def arrive(current: frozenset, value: frozenset) -> frozenset | None:
    """The checker's rule for one arrival at a combining receiver: copy, reduction, or None (double count)."""
    if value >= current or not value & current:
        return current | value
    return None


def valid_order(current: frozenset, arrivals: list[tuple[int, frozenset]]) -> list[int] | None:
    """Some order of the arrivals (source, value) that the checker accepts, by brute force (tiny inputs)."""
    for perm in itertools.permutations(range(len(arrivals))):
        cur: frozenset | None = current
        for i in perm:
            cur = arrive(cur, arrivals[i][1]) if cur is not None else None
        if cur is not None:
            return [arrivals[i][0] for i in perm]
    return None


@st.composite
def combining_collectives(draw, n: int) -> Collective:
    """Random contributions (each held by one or two ranks) summed into one or two addresses; the
    postcondition is drawn by the caller."""
    pre = draw(starts(n))
    chunks = 1 + max(c for _, c in pre)
    address = [draw(st.integers(0, 1)) for _ in range(chunks)]
    address[0] = 0
    if len(set(address)) == len(address):  # make it combining: two contributions share an address
        pre.append((draw(st.integers(0, n - 1)), chunks))
        address.append(address[0])
        chunks += 1
    return Collective("random", n, chunks, sorted(set(pre)), [pre[0]], address)


@st.composite
def accepted_combining_schedules(draw, max_ranks: int = 4, max_steps: int = 3) -> Schedule:
    """A combining schedule the checker accepts by construction: random sends of non-empty values over
    links, in a random order; an arrival the checker would reject (double count) is left out; the
    postcondition is what some ranks end with at some addresses."""
    topo = draw(topologies(max_ranks))
    base = draw(combining_collectives(topo.ranks))
    values: dict[tuple[int, int], frozenset] = {}
    for r, c in base.pre:
        values[(r, base.address[c])] = values.get((r, base.address[c]), frozenset()) | {c}
    steps = []
    for _ in range(draw(st.integers(1, max_steps))):
        possible = sorted(Send(a, l.src, l.dst) for l in topo.links for a in base.addresses
                          if values.get((l.src, a)))
        sends = draw(st.permutations(draw(st.lists(st.sampled_from(possible), unique=True)))) if possible else []
        new, kept = dict(values), []
        for s in sends:
            got = arrive(new.get((s.dst, s.chunk), frozenset()), values[(s.src, s.chunk)])
            if got is not None:
                new[(s.dst, s.chunk)] = got
                kept.append(s)
        steps.append(Step(rounds_needed(topo, kept) + draw(st.integers(0, 1)), kept))
        values = new
    ends = draw(st.lists(st.sampled_from(sorted(values)), min_size=1, unique=True))
    post = sorted((r, c) for r, a in ends for c in values[(r, a)])
    coll = Collective("random", topo.ranks, base.chunks, base.pre, post, base.address)
    return Schedule(topo, coll, steps, "random")


def all_combining_schedules(topo: Topology, coll: Collective, steps: int):
    """Every combining schedule with at most `steps` steps (one send per link, address and step at most),
    each step in an order the checker accepts; a send set no order makes valid is skipped."""
    def go(values: dict, left: int, prefix: list[Step]):
        yield prefix
        if left == 0:
            return
        possible = sorted(Send(a, l.src, l.dst) for l in topo.links for a in coll.addresses if values.get((l.src, a)))
        for k in range(1, len(possible) + 1):
            for sends in itertools.combinations(possible, k):
                ordered, new = [], dict(values)
                for d, a in sorted({(s.dst, s.chunk) for s in sends}):
                    arrivals = [(s.src, values[(s.src, a)]) for s in sends if (s.dst, s.chunk) == (d, a)]
                    order = valid_order(values.get((d, a), frozenset()), arrivals)
                    if order is None:
                        break
                    ordered += [Send(a, src, d) for src in order]
                    new[(d, a)] = values.get((d, a), frozenset()).union(*(v for _, v in arrivals))
                else:
                    yield from go(new, left - 1, [*prefix, Step(rounds_needed(topo, ordered), ordered)])
    start: dict = {}
    for r, c in coll.pre:
        start[(r, coll.address[c])] = start.get((r, coll.address[c]), frozenset()) | {c}
    for prefix in go(start, steps, []):
        yield Schedule(topo, coll, prefix, "enumerated")
