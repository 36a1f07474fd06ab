"""Where a lowered program's time goes in the sweep's timed run: each resource's busy share in equal windows
of the run (a rank's NVSwitch ingress and egress port, a NIC), for `benchmarks/lanes_periodic.py --profile`;
with `links`, each link too (a machine whose links are not switch ports: mi250's xGMI lanes and NICs).

    python benchmarks/port_profile.py MACHINE:N KIND --method NAME [--candidate I] [--instances I] [--size B]

prints, for a construction's schedule (the I-th of those `--method NAME` offers the sweep), the mean and the
largest busy share per window of the links between nodes and of the links inside a node.

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


def profile(sched: Schedule, size: int, instances: int, nodes: int, model: Model, windows: int = 20,
            links: bool = False) -> tuple[float, dict[Hashable, list[float]]]:
    """The run's time (µs, with the call's base latency) and, per switch group of the topology (a port or a
    NIC, by its index; with `links`, also per link, by (src, dst)), its busy share in each of `windows` equal
    windows of the run."""
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
    busy: dict[Hashable, list[float]] = {}
    seen: set[tuple[float, Hashable]] = set()
    for start, hold, res in _Hold.log:
        if not isinstance(res, tuple) or len(res) != 2 or (start, res) in seen:
            continue  # a message's longest hold is added again for its sender's clock and its arrival
        group = res[0] == "group"
        if not (group or (links and isinstance(res[0], int))):
            continue  # a channel (src, dst, channel)
        seen.add((start, res))
        row = busy.setdefault(res[1] if group else res, [0.0] * windows)
        a, b = start, start + hold
        i = int(a // width)
        while a < b and i < windows:
            e = min(b, (i + 1) * width)
            row[i] += (e - a) / width
            a, i = e, i + 1
    return float(end) + float(model.call_latency_us["Simple"]), busy


def main() -> None:
    import argparse

    from smtcoll import library, specs
    from smtcoll.synth.constructions import constructions

    ap = argparse.ArgumentParser()
    ap.add_argument("machine", help="MACHINE:N (a topology name or .toml file, N nodes)")
    ap.add_argument("kind")
    ap.add_argument("--method", required=True)
    ap.add_argument("--candidate", type=int, default=0)
    ap.add_argument("--instances", type=int, default=2)
    ap.add_argument("--size", type=int, default=1 << 30)
    ap.add_argument("--windows", type=int, default=20)
    args = ap.parse_args()
    name, _, count = args.machine.rpartition(":")
    nodes = int(count)
    topo = specs.resolve_topology(name, nodes)
    offered = [c for c in constructions(topo, library.collective(args.kind, topo.ranks)) if c.name == args.method]
    end, busy = profile(offered[args.candidate].schedule, args.size, args.instances, nodes, Model.load(),
                        args.windows, links=True)
    per_node = topo.ranks // nodes
    print(f"run {end:.1f} us")
    for what, keep in (("between nodes", lambda s, d: s // per_node != d // per_node),
                       ("inside a node", lambda s, d: s // per_node == d // per_node)):
        rows = [v for k, v in busy.items() if isinstance(k, tuple) and keep(*k)]
        if rows:
            print(f"{what} ({len(rows)} links), mean:", " ".join(f"{sum(r[i] for r in rows) / len(rows):.2f}"
                                                            for i in range(args.windows)))
            print(f"{what} ({len(rows)} links), most:", " ".join(f"{max(r[i] for r in rows):.2f}"
                                                            for i in range(args.windows)))


if __name__ == "__main__":
    main()
