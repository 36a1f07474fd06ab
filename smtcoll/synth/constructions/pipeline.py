"""Trees per address, scheduled into steps: the engine under the tree-shaped constructions.

A construction gives, for every address, an in-tree (reduce: every rank sends its partial sum to its
parent once all its children's partials arrived) and/or an out-tree (broadcast: every rank forwards
the value once it arrived). Reduce sends carry disjoint partial sums (a subtree each), broadcast sends
carry the whole value, which contains whatever the receiver holds: both are what the checker's
combining rule accepts (docs/synth.md). `schedule_transfers` then places every transfer in the earliest
step after its dependencies where its link and switch groups have a lane left (list scheduling in the
construction's order, one round per step), which pipelines consecutive addresses: a tree's depth costs
steps once, not once per address. Hand-written: no library schedules a DAG under per-step link and
switch-group capacities with the step model's "what the sender held when the step began" rule.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import attrs

from smtcoll.model import Send, Step, Topology
from smtcoll.synth.constructions.common import send_key

Tree = Mapping[int, int]  # child -> parent (in-tree) or rank -> parent it receives from (out-tree)


@attrs.frozen
class Transfer:
    chunk: int
    src: int
    dst: int
    after: tuple[int, ...] = ()  # indices of transfers that must arrive in an earlier step


class Plan:
    """Transfers in priority order, with their dependencies."""

    def __init__(self) -> None:
        self.transfers: list[Transfer] = []

    def add(self, chunk: int, src: int, dst: int, after: Sequence[int] = ()) -> int:
        self.transfers.append(Transfer(chunk, src, dst, tuple(after)))
        return len(self.transfers) - 1

    def reduce(self, chunk: int, tree: Tree, root: int, after: Mapping[int, Sequence[int]] | None = None) -> list[int]:
        """Sends of an in-tree toward `root` (tree: child -> parent); returns the transfers into the root.
        `after[r]`: transfers that must arrive at r before r sends (its value must include them)."""
        children: dict[int, list[int]] = {}
        for c, p in tree.items():
            children.setdefault(p, []).append(c)
        into: dict[int, list[int]] = {}

        def visit(u: int) -> None:  # post-order: a rank sends after all its children did
            for c in sorted(children.get(u, [])):
                visit(c)
            if u != root:
                deps = [*into.get(u, []), *((after or {}).get(u, []))]
                into.setdefault(tree[u], []).append(self.add(chunk, u, tree[u], deps))

        visit(root)
        return into.get(root, [])

    def broadcast(self, chunk: int, tree: Tree, root: int, after: Sequence[int] = ()) -> dict[int, int]:
        """Sends of an out-tree from `root` (tree: rank -> the rank it receives from) once `after`
        arrived at the root; returns rank -> the transfer that brings it the value."""
        children: dict[int, list[int]] = {}
        for c, p in tree.items():
            children.setdefault(p, []).append(c)
        arrival: dict[int, int] = {}
        order = [root]
        for u in order:  # breadth-first: parents before children
            for c in sorted(children.get(u, [])):
                deps = [arrival[u]] if u in arrival else list(after)
                arrival[c] = self.add(chunk, u, c, deps)
                order.append(c)
        return arrival


def schedule_transfers(topo: Topology, plan: Plan, deep: bool = False) -> list[Step]:
    """The shorter of two list schedules: transfers in the plan's order (address by address), and level
    by level (every address's first hop, then every second hop, ...: the ramp-up fills the links sooner);
    the plan's order on a tie. `deep` adds a third, `deep_first`, and picks by `link_time`."""
    orders = list_orders(plan, deep)
    if not deep:
        first, second = (_list_schedule(topo, plan, o) for o in orders)
        return second if len(second) < len(first) else first
    found = [_list_schedule(topo, plan, o) for o in orders]
    return min(found, key=lambda steps: (link_time(topo, steps), len(steps)))


def list_orders(plan: Plan, deep: bool) -> list[list[int]]:
    """The plan's order, level by level and, with `deep`, the transfers with the most hops still to go
    after them first (the classic critical-path priority: a tree's deep branches start early, so the
    pipeline fills sooner; mi250's exact packing: 10 steps where the plan's order takes 12)."""
    level: list[int] = []
    for t in plan.transfers:
        level.append(1 + max((level[d] for d in t.after), default=0))
    orders = [list(range(len(plan.transfers))), sorted(range(len(plan.transfers)), key=lambda i: (level[i], i))]
    if deep:
        height = [1] * len(plan.transfers)
        for i in range(len(plan.transfers) - 1, -1, -1):  # a transfer waits only for earlier ones
            for d in plan.transfers[i].after:
                height[d] = max(height[d], height[i] + 1)
        orders.append(sorted(range(len(plan.transfers)), key=lambda i: (-height[i], level[i], i)))
    return orders


def list_candidates(topo: Topology, plan: Plan, release: Mapping[int, int] | None = None) -> list[list[Step]]:
    """The list schedules of every order `list_orders(plan, True)` gives (a construction that turns them
    round, as ReduceScatter does, picks among them itself); `release[i]`: the first step transfer i may
    take (data that arrives from outside the plan, as a NIC brings it)."""
    return [_list_schedule(topo, plan, o, release) for o in list_orders(plan, True)]


def link_time(topo: Topology, steps: Sequence[Step]) -> Fraction:
    """When the last send ends if each link sends its chunks one after another, in the schedule's order,
    each in 1 / bandwidth (a link's lanes as one faster link, as the lowered program runs it), and a rank
    sends a chunk once every earlier send of it into the rank has ended: how the timed run of the lowered
    program sees the order, without its channels and latencies. Steps count lanes, not this."""
    free: dict[tuple[int, int], Fraction] = {}
    ready: dict[tuple[int, int], Fraction] = {}  # (chunk, rank) -> when its last earlier arrival ended
    end = Fraction(0)
    for st in steps:
        arrivals = []
        for x in st.sends:
            link = (x.src, x.dst)
            start = max(free.get(link, Fraction(0)), ready.get((x.chunk, x.src), Fraction(0)))
            done = start + Fraction(1, topo.bandwidth(*link))
            free[link] = done
            arrivals.append(((x.chunk, x.dst), done))
            end = max(end, done)
        for key, done in arrivals:  # a step's sends leave with what the sender held when it began
            ready[key] = max(ready.get(key, Fraction(0)), done)
    return end


def turn(steps: Sequence[Step]) -> list[Step]:
    """The steps run backwards with every send reversed: a schedule of the reversed links' transposed
    collective (an out-tree's broadcast becomes its in-tree's reduce, and back)."""
    return [Step(st.rounds, sorted((Send(x.chunk, x.dst, x.src) for x in st.sends), key=send_key))
            for st in reversed(steps)]


def backward(topo: Topology, plan: Plan, steps: Sequence[Step], lag: int = 1) -> list[Step]:
    """The backward pass of forward-backward list scheduling: `plan`'s transfers turned round (on the
    reversed links, each waiting for the transfers that waited for it) list-scheduled with those that end
    `steps` (a schedule of `plan`) last first, then turned back: the same transfers, each as late as the
    capacity after it allows. A forward list schedule packs its start and leaves its end ragged (mi250's
    exact packing: the slow links' last transfers slip a step behind the relays' forwards); this packs the
    end, keeping the forward pass's order elsewhere. A chunk crosses a link once in `plan` (trees). `lag`:
    as `_list_schedule`'s."""
    when: dict[tuple[int, int, int], int] = {}
    for s, st in enumerate(steps):
        for x in st.sends:
            when[(x.chunk, x.src, x.dst)] = s
    n = len(plan.transfers)
    then: list[list[int]] = [[] for _ in range(n)]
    for i, t in enumerate(plan.transfers):
        for d in t.after:
            then[d].append(i)
    reverse = Plan()  # transfer i is reverse's n - 1 - i: what waited for it comes before it
    for i in range(n - 1, -1, -1):
        t = plan.transfers[i]
        reverse.add(t.chunk, t.dst, t.src, [n - 1 - j for j in then[i]])
    last = [-when[(t.chunk, t.src, t.dst)] for t in reversed(plan.transfers)]
    return turn(_list_schedule(topo.reversed(), reverse, topological(reverse, last), lag=lag))


def topological(plan: Plan, key: Sequence[Any]) -> list[int]:
    """The plan's transfers with every dependency before its dependants, the least `key` first among
    those whose dependencies are placed (ties by index)."""
    waits = [len(t.after) for t in plan.transfers]
    then: list[list[int]] = [[] for _ in plan.transfers]
    for i, t in enumerate(plan.transfers):
        for d in t.after:
            then[d].append(i)
    ready = [(key[i], i) for i, w in enumerate(waits) if not w]
    heapq.heapify(ready)
    out: list[int] = []
    while ready:
        _, i = heapq.heappop(ready)
        out.append(i)
        for j in then[i]:
            waits[j] -= 1
            if not waits[j]:
                heapq.heappush(ready, (key[j], j))
    return out


def _list_schedule(topo: Topology, plan: Plan, order: list[int], release: Mapping[int, int] | None = None,
                   keep_empty: bool = False, lag: int = 1) -> list[Step]:
    """Each transfer, in `order` (dependencies first), into the earliest step after its dependencies (and
    no earlier than `release`, by index) with a free lane on its link and a free unit in each switch group
    it crosses; steps of one round. `keep_empty`: steps without a send stay, as empty steps (their
    numbers are those `release` counts). `lag`: steps from a dependency to its dependant (more than 1
    lets other pieces go on a link while a relayed piece is still in flight: a hop's latency hidden)."""
    groups_of: dict[tuple[int, int], list[tuple[Any, int]]] = {}  # link -> its resources and their capacities
    load: dict[tuple[Any, int], int] = {}  # (resource, step) -> transfers placed
    # per resource, its full steps, each pointing at a later step to try (path-compressed): the earliest step
    # with room on every resource is found without walking the full ones one by one (a busy switch group is
    # full for most of a long schedule)
    full: dict[Any, dict[int, int]] = {}

    def room(res: Any, s: int) -> int:
        jump = full.get(res)
        if not jump or s not in jump:
            return s
        path = []
        while s in jump:
            path.append(s)
            s = jump[s]
        for p in path:
            jump[p] = s
        return s

    step_of: dict[int, int] = {}
    for i in order:
        t = plan.transfers[i]
        key = (t.src, t.dst)
        if key not in groups_of:
            bw = topo.bandwidth(*key)
            if bw == 0:
                raise ValueError(f"no link {t.src} -> {t.dst}")  # a construction's bug: caught by its tests
            groups_of[key] = [(key, bw), *((g, topo.switches[g].bandwidth) for g in topo.switches_of(*key))]
        held = groups_of[key]
        s = max([0, *(step_of[d] + lag for d in t.after), (release or {}).get(i, 0)])
        moved = True
        while moved:  # until every resource has room at s
            moved = False
            for res, _ in held:
                r = room(res, s)
                if r != s:
                    s, moved = r, True
        for res, cap in held:
            n = load[(res, s)] = load.get((res, s), 0) + 1
            if n >= cap:
                full.setdefault(res, {})[s] = s + 1
        step_of[i] = s
    per_step: list[list[Send]] = [[] for _ in range(max(step_of.values(), default=-1) + 1)]
    for i, s in step_of.items():
        t = plan.transfers[i]
        per_step[s].append(Send(t.chunk, t.src, t.dst))
    return [Step(1, sorted(sends, key=send_key)) for sends in per_step if sends or keep_empty]


def busiest_link(plan: Plan) -> int:
    """The most transfers on one link: the lowering runs a link's sends in one thread block per channel,
    which holds at most `MAX_STEPS["executor"]` (64) operations."""
    load: dict[tuple[int, int], int] = {}
    for t in plan.transfers:
        load[(t.src, t.dst)] = load.get((t.src, t.dst), 0) + 1
    return max(load.values(), default=0)


def timed_schedule(topo: Topology, plan: Plan, latency: Mapping[tuple[int, int], float] | None = None) -> list[Step]:
    """A list schedule in time rather than rounds: each transfer, in the plan's order, starts at the
    earliest moment after its dependencies arrived when its link and every switch group it crosses are idle
    for as long as it holds them (chunk / GB/s of each: a NIC holds a chunk 12x longer than an A100's
    NVSwitch port), filling earlier idle gaps; the steps then follow the start times. The lowered program
    runs each connection's transfers in step order, so an order that assumes every resource as fast as the
    round model does (`schedule_transfers`) makes the fast ports wait in line behind transfers whose data
    is still crossing a slow NIC. Links without a speed count their lanes (`bandwidth`) as GB/s.
    `latency[link]`, in the same unit (one chunk through 1 GB/s), delays each arrival: without it the
    order assumes that a sum can be forwarded the moment its last share arrived, and the receivers'
    thread blocks, which run in that order, wait one message latency per dependent step."""
    import bisect

    from smtcoll.model.timed import group_gbps

    speed: dict[tuple[int, int], float] = {(l_.src, l_.dst):
                                           float(l_.gbps or l_.bandwidth) for l_ in topo.links}
    gspeed = [float(group_gbps(topo, g) or g.bandwidth) for g in topo.switches]
    busy: dict[object, tuple[list[float], list[float]]] = {}  # resource -> (starts, ends), sorted, disjoint
    start: list[float] = [0.0] * len(plan.transfers)
    end: list[float] = [0.0] * len(plan.transfers)

    def gap(res: object, t: float, d: float) -> float:
        """The earliest u >= t with `res` idle over [u, u + d)."""
        starts, ends = busy.setdefault(res, ([], []))
        i = bisect.bisect_right(ends, t)
        while i < len(starts) and starts[i] < t + d:
            t = max(t, ends[i])
            i += 1
        return t

    for i, tr in enumerate(plan.transfers):
        key = (tr.src, tr.dst)
        if key not in speed:
            raise ValueError(f"no link {tr.src} -> {tr.dst}")  # a construction's bug: caught by its tests
        holds = [(("l", key), 1 / speed[key]), *((("g", g), 1 / gspeed[g]) for g in topo.switches_of(*key))]
        t = max((end[d] for d in tr.after), default=0.0)
        while True:
            u = t
            for res, d in holds:
                u = gap(res, u, d)
            if u == t:
                break
            t = u
        for res, d in holds:
            _occupy(*busy[res], t, t + d)
        start[i], end[i] = t, t + max(d for _, d in holds) + (latency or {}).get(key, 0.0)
    # steps in start order, a link's transfers in separate steps (a step's sends are lowered in chunk order)
    step_of = [0] * len(plan.transfers)
    last: dict[tuple[int, int], int] = {}
    current = 0
    for i in sorted(range(len(plan.transfers)), key=lambda i: (start[i], i)):
        tr = plan.transfers[i]
        current = max([current, last.get((tr.src, tr.dst), -1) + 1, *(step_of[d] + 1 for d in tr.after)])
        step_of[i] = last[(tr.src, tr.dst)] = current
    per_step: list[list[Send]] = [[] for _ in range(current + 1)]
    for i, tr in enumerate(plan.transfers):
        per_step[step_of[i]].append(Send(tr.chunk, tr.src, tr.dst))
    return [Step(_rounds(topo, sends), sorted(sends, key=send_key)) for sends in per_step if sends]


def _occupy(starts: list[float], ends: list[float], t: float, e: float) -> None:
    """Mark [t, e) busy in the sorted disjoint intervals, merged with those it touches: a busy switch group's
    intervals stay one, so `gap` does not walk every transfer it carried (same answers: touching intervals
    leave no idle time between them)."""
    import bisect

    j = bisect.bisect_left(starts, t)
    if j and ends[j - 1] == t:
        if j < len(starts) and starts[j] == e:
            ends[j - 1] = ends[j]
            del starts[j], ends[j]
        else:
            ends[j - 1] = e
    elif j < len(starts) and starts[j] == e:
        starts[j] = t
    else:
        starts.insert(j, t)
        ends.insert(j, e)


def _rounds(topo: Topology, sends: Sequence[Send]) -> int:
    """The rounds a step needs: its busiest link or switch group, in lanes."""
    load: dict[tuple[int, int], int] = {}
    for x in sends:
        load[(x.src, x.dst)] = load.get((x.src, x.dst), 0) + 1
    rounds = max(-(-c // topo.bandwidth(*k)) for k, c in load.items())
    used: dict[int, int] = {}
    for k, c in load.items():
        for g in topo.switches_of(*k):
            used[g] = used.get(g, 0) + c
    return max([rounds, *(-(-u // topo.switches[g].bandwidth) for g, u in used.items())])


# What `hop_latencies` assumes of the run: a message's latency as NCCL's Simple protocol gives it per hop
# (hwLat, src/graph/tuning.cc: NVLink 3.4 µs, network 9.6 µs) plus the link's own alpha_us, for a buffer of
# NOMINAL_BYTES over NOMINAL_INSTANCES channels per connection: the sizes the throughput constructions are
# for (256 MiB to 1 GiB; a100 x2 Allreduce, `pairwise`, 2 instances: 0.74 / 0.92 of the bound at 256 MiB /
# 1 GiB ordered without latencies, 0.93 / 0.98 with them, docs/benchmarks.md)
HOP_US = {"intra": 3.4, "net": 9.6}
DEFAULT_ALPHA_US = 1.0
NOMINAL_BYTES = 256 << 20
NOMINAL_INSTANCES = 2


def hop_latencies(topo: Topology, node: Sequence[int], addresses: int) -> dict[tuple[int, int], float]:
    """Each link's message latency in `timed_schedule`'s unit (one chunk through 1 GB/s), for a buffer
    of NOMINAL_BYTES cut into `addresses` chunks per instance; links between nodes are network hops."""
    unit_us = NOMINAL_BYTES / (addresses * NOMINAL_INSTANCES) / 1000  # µs of one chunk at 1 GB/s
    out = {}
    for l_ in topo.links:
        hop = HOP_US["net" if node[l_.src] != node[l_.dst] else "intra"]
        alpha = l_.alpha_us if l_.alpha_us is not None else DEFAULT_ALPHA_US
        out[(l_.src, l_.dst)] = (hop + alpha) / unit_us
    return out


def replay_time(topo: Topology, steps: Sequence[Step], latency: Mapping[tuple[int, int], float]) -> float:
    """When the last transfer of `steps` arrives if every send, in step order, starts once its link and
    switch groups are free and its sender holds every earlier arrival of its chunk, holding each resource
    chunk / GB/s, and arrives `latency[link]` after it ends (`timed_schedule`'s units): how the lowered
    program, which runs each connection in step order, sees an order, to choose between two."""
    from smtcoll.model.timed import group_gbps

    speed = {(l_.src, l_.dst): float(l_.gbps or l_.bandwidth) for l_ in topo.links}
    gspeed = [float(group_gbps(topo, g) or g.bandwidth) for g in topo.switches]
    free: dict[object, float] = {}
    ready: dict[tuple[int, int], float] = {}
    end = 0.0
    for st in steps:
        arrivals = []
        for x in st.sends:
            key = (x.src, x.dst)
            holds = [(("l", key), 1 / speed[key]), *((("g", g), 1 / gspeed[g]) for g in topo.switches_of(*key))]
            t = max([ready.get((x.chunk, x.src), 0.0), *(free.get(r, 0.0) for r, _ in holds)])
            for r, d in holds:
                free[r] = t + d
            done = t + max(d for _, d in holds) + latency.get(key, 0.0)
            arrivals.append(((x.chunk, x.dst), done))
            end = max(end, done)
        for k, done in arrivals:  # a step's sends leave with what the sender held when it began
            ready[k] = max(ready.get(k, 0.0), done)
    return end
