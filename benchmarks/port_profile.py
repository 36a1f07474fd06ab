"""Where a lowered program's time goes in the sweep's timed run: each resource's busy share in equal windows
of the run (a rank's NVSwitch ingress and egress port, a NIC), for `benchmarks/lanes_periodic.py --profile`.

The run is the one `smtcoll.sweep.cost.schedule_time` times (the same lowering, machine, serving order and
holds), on floats instead of exact numbers, so its time can differ from the exact one in the last digits.
It records every hold by a float subclass whose reflected addition logs the departure it is added to: the
run computes a resource's release as `departure + hold` (`check.execution`). A run that logs nothing (that
rule changed) is an error, not an empty profile.
"""

from __future__ import annotations

from collections.abc import Hashable
from fractions import Fraction
from typing import Any, ClassVar

from smtcoll.check.topology_cost import program_makespan, program_thread_blocks
from smtcoll.lower import LowerOptions, lower
from smtcoll.model import Schedule
from smtcoll.sweep.cost import Model, holds, machine, serving_order


class _Hold(float):
    """A hold (µs) that logs (departure, hold, resource) when the run adds it to a departure."""

    log: ClassVar[list[tuple[float, float, Hashable]]] = []
    res: Hashable

    def __new__(cls, value: float, res: Hashable) -> _Hold:
        out = float.__new__(cls, value)
        out.res = res
        return out

    def __radd__(self, other: Any) -> float:
        _Hold.log.append((float(other), float(self), self.res))
        return float(other) + float(self)


def profile(sched: Schedule, size: int, instances: int, nodes: int, model: Model, windows: int = 20
            ) -> tuple[float, dict[int, list[float]]]:
    """The run's time (µs, with the call's base latency) and, per switch group of the topology (a port or a
    NIC, by its index), its busy share in each of `windows` equal windows of the run."""
    m = machine(sched.topology, nodes, model)
    program = lower(sched, LowerOptions(instances, "Simple", "executor", "outofplace", size, size, True)).program
    tbs = program_thread_blocks(program)
    order = serving_order(program, m, model, tbs)
    if order is None:
        raise RuntimeError("the program deadlocks")
    assert program.nchunksperloop is not None  # a lowered program states it
    chunk = Fraction(size) / program.nchunksperloop
    per_byte = holds(m, model, "Simple")

    def occupy(conn: tuple[int, int, int]) -> tuple[float, tuple[tuple[Hashable, float], ...]]:
        lat, held = per_byte(conn)
        return float(lat), tuple((k, _Hold(float(h * chunk), k)) for k, h in held)

    _Hold.log = []
    end = program_makespan(program, occupy, tbs, zero=0.0, replay=order)
    if end is None or not _Hold.log:
        raise RuntimeError("the run logged no holds: check.execution no longer adds a hold to a departure")
    width = float(end) / windows
    busy: dict[int, list[float]] = {}
    seen: set[tuple[float, Hashable]] = set()
    for start, hold, res in _Hold.log:
        if not (isinstance(res, tuple) and res and res[0] == "group") or (start, res) in seen:
            continue  # a message's longest hold is added again for its sender's clock and its arrival
        seen.add((start, res))
        row = busy.setdefault(res[1], [0.0] * windows)
        a, b = start, start + hold
        i = int(a // width)
        while a < b and i < windows:
            e = min(b, (i + 1) * width)
            row[i] += (e - a) / width
            a, i = e, i + 1
    return float(end) + float(model.call_latency_us["Simple"]), busy
