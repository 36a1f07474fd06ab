"""Checking a step schedule by simulation, independently of how it was made.

Values are sets of contributions (chunk ids) per (rank, address). A send moves the sender's value as it
was when the step began; the receiver combines it by the one arrival rule of `arrival.py`.
Postconditions are exact: a rank must end with precisely the contributions its postcondition names.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable

from smtcoll.check.arrival import EMPTY, arrive
from smtcoll.check.report import Report, Violation
from smtcoll.errors import SmtcollError
from smtcoll.findings import Capped
from smtcoll.formats import load_schedule
from smtcoll.model import Schedule, Topology
from smtcoll.text import count

WHOLE_STEPS = True  # check a clean step of a copy collective at once (tests compare with the send-by-send walk)


def check_schedule(schedule: Schedule, file: str = "<schedule>") -> Report:
    topo, coll = schedule.topology, schedule.collective
    out = Capped()

    def report(code: str, message: str, **where: int) -> None:
        out.add(Violation(code, message, "error", where))

    # A million sends are checked here for a 1024-rank Allgather: the loops below use plain dicts and sets
    # of ints and skip work that cannot change a verdict (see the comments), but keep every check.
    addresses = set(coll.addresses)
    combining = coll.is_combining
    bandwidth = {(link.src, link.dst): link.bandwidth for link in topo.links}
    if not combining and not topo.switches:
        _check_copies(schedule, report)
        return _finish(schedule, file, out)
    value: dict[tuple[int, int], frozenset[int]] = {}
    for r, c in coll.pre:
        key = (r, coll.address[c])
        if combining:
            value[key] = value.get(key, frozenset()) | {c}
        else:
            value[key] = frozenset({c})

    groups_of: dict[tuple[int, int], list[int]] = {}  # link -> the switch groups that bound it
    for i, step in enumerate(schedule.steps):
        load: dict[tuple[int, int], int] = {}
        incoming: dict[tuple[int, int], list[tuple[int, frozenset[int]]]] = {}
        for j, s in enumerate(step.sends):
            src, dst, a = s.src, s.dst, s.chunk
            if src == dst:
                report("self-send", f"rank {src} sends address {a} to itself", step=i, send=j)
                continue
            if a not in addresses:
                report("unknown-address", f"address {a} does not exist in collective {coll.name!r} "
                                          f"(it has {len(addresses)} addresses)", step=i, send=j)
                continue
            link = (src, dst)
            if link not in bandwidth:
                report("missing-link", f"no link {src} -> {dst} in topology {topo.name!r}", step=i, send=j)
            load[link] = load.get(link, 0) + 1
            held = value.get((src, a))
            if not held:
                report("not-held", f"rank {src} sends address {a} before it holds it "
                                   f"(causality: a send moves what the sender held when the step began)",
                       step=i, send=j)
                continue
            arrivals = incoming.get((dst, a))
            if arrivals is None:
                incoming[(dst, a)] = [(j, held)]
            else:
                arrivals.append((j, held))  # in send order: j grows
        for (src, dst), n in sorted(load.items()):
            cap = bandwidth.get((src, dst), 0) * step.rounds
            if (src, dst) in bandwidth and n > cap:
                report("bandwidth", f"link {src} -> {dst} carries {n} chunks in a step of "
                                    f"{count(step.rounds, 'round')}; its capacity is {cap}", step=i)
        # each loaded link adds its load to the groups that bound it (looked up once per link), instead of
        # every group summing every link: 768 groups x 255 steps on dgx2 x 16
        group_load: dict[int, int] = {}
        for link, n in load.items():
            gs = groups_of.get(link)
            if gs is None:
                gs = groups_of[link] = topo.switches_of(*link)
            for g in gs:
                group_load[g] = group_load.get(g, 0) + n
        for g in sorted(group_load):
            group, n = topo.switches[g], group_load[g]
            cap = group.bandwidth * step.rounds
            if n > cap:
                report("switch-bandwidth", f"switch group {group.name or g} carries {n} chunks in a step of "
                                           f"{count(step.rounds, 'round')}; its capacity is {cap}", step=i)
        for (dst, a), arrivals in sorted(incoming.items()):
            current = value.get((dst, a), EMPTY)
            for j, v in arrivals:
                current, twice = arrive(combining, current, v)
                if twice:
                    report("double-count", f"rank {dst} would sum contribution(s) {_few(sorted(twice))} to address "
                                           f"{a} twice", step=i, send=j)
            value[(dst, a)] = current

    if not combining:
        # one chunk per address: a rank needs the address of each chunk in its postcondition
        missing = sorted((r, coll.address[c], c) for r, c in coll.post if (r, coll.address[c]) not in value)
        for r, a, c in missing:
            report("postcondition", f"rank {r} never receives chunk {c} (address {a})")
    for r in range(coll.ranks if combining else 0):
        required: dict[int, set[int]] = {}
        for c in coll.post_sets[r]:
            required.setdefault(coll.address[c], set()).add(c)
        for a, need in sorted(required.items()):
            have = value.get((r, a), frozenset())
            if have != need:
                missing_c, extra = sorted(need - have), sorted(have - need)
                why = "; ".join(x for x in (f"missing contribution(s) {_few(missing_c)}" if missing_c else "",
                                            f"extra contribution(s) {_few(extra)}" if extra else "") if x)
                report("postcondition", f"rank {r} ends with the wrong value at address {a}: {why}")
    return _finish(schedule, file, out)


def _finish(schedule: Schedule, file: str, out: Capped) -> Report:
    topo, coll = schedule.topology, schedule.collective

    sends = sum(len(s.sends) for s in schedule.steps)
    metrics = {"steps": len(schedule.steps), "rounds": schedule.rounds, "chunks": coll.chunk_factor,
               "rounds_per_chunk": round(schedule.rounds / coll.chunk_factor, 6), "sends": sends,
               "topology": topo.name}
    return Report(file, coll.name, coll.ranks, None, out.findings(), metrics)


def _check_copies(schedule: Schedule, report: Callable[..., None]) -> None:
    """The same checks for a collective whose chunks each have their own address on a topology without
    switch groups (Allgather, Alltoall, ...), where a rank's value at an address is only: held or not.
    Each step is first checked with whole-step set operations (C loops, not Python ones, on a million
    sends); a step that passes them all is applied at once, any other is walked send by send, exactly as
    `check_schedule` does, to report its violations in order."""
    topo, coll = schedule.topology, schedule.collective
    addresses = set(coll.addresses)
    bandwidth = {(link.src, link.dst): link.bandwidth for link in topo.links}
    held = {(r, coll.address[c]) for r, c in coll.pre}  # (rank, address) pairs a rank holds
    least = min(bandwidth.values(), default=0)
    for i, step in enumerate(schedule.steps):
        srcs = [s.src for s in step.sends]
        dsts = [s.dst for s in step.sends]
        chunks = [s.chunk for s in step.sends]
        if (WHOLE_STEPS and not any(map(operator.eq, srcs, dsts)) and addresses.issuperset(chunks)
                and held.issuperset(zip(srcs, chunks)) and _within(bandwidth, least, srcs, dsts, step.rounds)):
            held.update(zip(dsts, chunks))  # every sender held its address when the step began
            continue
        loads: dict[tuple[int, int], int] = {}
        arrivals: list[tuple[int, int]] = []
        for j, s in enumerate(step.sends):
            if s.src == s.dst:
                report("self-send", f"rank {s.src} sends address {s.chunk} to itself", step=i, send=j)
                continue
            if s.chunk not in addresses:
                report("unknown-address", f"address {s.chunk} does not exist in collective {coll.name!r} "
                                          f"(it has {len(addresses)} addresses)", step=i, send=j)
                continue
            if (s.src, s.dst) not in bandwidth:
                report("missing-link", f"no link {s.src} -> {s.dst} in topology {topo.name!r}", step=i, send=j)
            loads[(s.src, s.dst)] = loads.get((s.src, s.dst), 0) + 1
            if (s.src, s.chunk) not in held:
                report("not-held", f"rank {s.src} sends address {s.chunk} before it holds it "
                                   f"(causality: a send moves what the sender held when the step began)",
                       step=i, send=j)
                continue
            arrivals.append((s.dst, s.chunk))
        for (src, dst), n in sorted(loads.items()):
            cap = bandwidth.get((src, dst), 0) * step.rounds
            if (src, dst) in bandwidth and n > cap:
                report("bandwidth", f"link {src} -> {dst} carries {n} chunks in a step of "
                                    f"{count(step.rounds, 'round')}; its capacity is {cap}", step=i)
        held.update(arrivals)
    # one chunk per address: a rank needs the address of each chunk in its postcondition (all held: one
    # C-level pass over a million pairs; else the pairs missing, in order)
    ranks_, chunks_ = map(operator.itemgetter(0), coll.post), map(operator.itemgetter(1), coll.post)
    if held.issuperset(zip(ranks_, map(coll.address.__getitem__, chunks_))):
        return
    missing = [(r, coll.address[c], c) for r, c in coll.post if (r, coll.address[c]) not in held]
    for r, a, c in sorted(missing):
        report("postcondition", f"rank {r} never receives chunk {c} (address {a})")


def _within(bandwidth: dict[tuple[int, int], int], least: int, srcs: list[int], dsts: list[int], rounds: int) -> bool:
    """Every link of the step carries at most its capacity: at once when no link is used twice, every link
    exists and the narrowest carries one per round; else counted per link."""
    links = set(zip(srcs, dsts))
    if len(links) == len(srcs) and least * rounds >= 1 and bandwidth.keys() >= links:
        return True
    return all(bandwidth.get(link, 0) * rounds >= n for link, n in Counter(zip(srcs, dsts)).items())


def _few(items: list[int]) -> str:
    return ", ".join(map(str, items[:8])) + (f" and {len(items) - 8} more" if len(items) > 8 else "")


def check_schedule_file(path: str, topology: Topology | None = None) -> Report:
    """Read and check a schedule file; unreadable input gives an `unusable` report, not an exception.

    With `topology`, the schedule is checked on that topology instead of the one its file embeds (is this
    algorithm valid on my machine?)."""
    try:
        schedule = load_schedule(path)
    except SmtcollError as e:
        return Report(path, violations=[Violation("unusable", str(e), "error")], unusable=True)
    if topology is not None:
        if topology.ranks != schedule.topology.ranks:
            return Report(path, schedule.collective.name, schedule.collective.ranks, None, [Violation(
                "topology-mismatch", f"the schedule has {schedule.topology.ranks} ranks, topology {topology.name!r} "
                                     f"has {topology.ranks}", "error")])
        schedule = Schedule(topology, schedule.collective, schedule.steps, schedule.name)
    return check_schedule(schedule, path)
