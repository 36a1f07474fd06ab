"""The sweep's predicted curve is the timed run at every size (issue 23, session 10): the run serves its thread
blocks in one order for every size (`cost.serving_order`), so its time is a maximum of lines in the size and
`cost.predict` recovers it exactly. A queue that chose by the times at each size (the run before) made the
time non-convex, and the curve undercut the run by up to 6% (docs/benchmarks.md, "The predicted curve equals
the run (session 10)")."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smtcoll import library, specs
from smtcoll.check.topology_cost import program_makespan
from smtcoll.lower import LowerOptions, lower
from smtcoll.sweep import cost
from smtcoll.synth.constructions import constructions

MODEL = cost.Model.load()


def _program(machine: str, kind: str, name: str, instances: int, protocol: str = "Simple") -> tuple[object, object]:
    topo = specs.resolve_topology(machine)
    c = next(c for c in constructions(topo, library.collective(kind, topo.ranks)) if c.name == name)
    program = lower(c.schedule, LowerOptions(instances, protocol, "executor", "outofplace", 1 << 10, 1 << 30,
                                             True)).program
    return program, cost.machine(topo, 1, MODEL)


def _affine(program, m, size: int):
    n = program.nchunksperloop
    return cost.occupancy(m, MODEL, program.proto, cost.Affine(Fraction(size, n), Fraction(1, n)))


def _run(program, m, size: int, replay=None) -> Fraction:
    """The timed run at one size on `Affine` numbers (not the packed integers `predict` uses), in the order
    `replay` gives, or choosing by the times at this size when None (the queue before session 10)."""
    t = program_makespan(program, _affine(program, m, size), replay=replay)
    assert t is not None
    return t.v + MODEL.call_latency_us[program.proto]


def test_an_order_chosen_per_size_is_not_convex_and_the_fixed_order_is_the_curve():
    """ndv2 Allgather, NCCL's ring at 8 instances: choosing per size, the run at 4829324 bytes lies above the
    chord of its neighbours (no maximum of lines, hence no curve `predict` can build, equals it; the curve
    undercut it by 2.6%). With the one serving order the curve is the run at all three sizes, and convex."""
    program, m = _program("ndv2", "allgather", "nccl_ring", 8)
    a, b, c = 3818056, 4829324, 6108441
    per_size = [_run(program, m, x) for x in (a, b, c)]
    assert per_size[1] > (per_size[0] * (c - b) + per_size[2] * (b - a)) / (c - a)
    order = cost.serving_order(program, m, MODEL)
    curve = cost.predict(program, m, MODEL, 1 << 10, 1 << 30)
    assert curve is not None and order is not None
    fixed = [_run(program, m, x, order) for x in (a, b, c)]
    assert [curve.at(x) for x in (a, b, c)] == fixed
    assert fixed[1] <= (fixed[0] * (c - b) + fixed[2] * (b - a)) / (c - a)


PROGRAMS = [("dgx1", "allgather", "nccl_ring", 2, "LL"), ("ndv2", "allreduce", "nccl_ring", 1, "Simple"),
            ("a100", "allgather", "nccl_ring", 1, "LL128"), ("ndv2", "allgather", "treepack", 2, "Simple")]


@pytest.fixture(scope="module")
def curves():
    out = []
    for spec in PROGRAMS:
        program, m = _program(*spec[:4], protocol=spec[4])
        out.append((program, m, cost.predict(program, m, MODEL, 1 << 10, 1 << 30),
                    cost.serving_order(program, m, MODEL)))
    return out


@given(st.integers(0, len(PROGRAMS) - 1), st.integers(1 << 10, 1 << 30))
@settings(max_examples=40, deadline=None)
def test_the_curve_is_the_run_at_any_size(curves, which, size):
    program, m, curve, order = curves[which]
    assert curve is not None
    assert curve.at(size) == _run(program, m, size, order)
    assert all(x.slope < y.slope for x, y in zip(curve.lines, curve.lines[1:]))  # convex: slopes grow


@pytest.mark.slow
def test_the_sweep_directory_is_never_slower_than_nccl_between_the_table_sizes(tmp_path: Path, cli):
    """`smtcoll sweep` on a small machine: at sizes that are not powers of two, the file the directory holds
    for the size, run at that size, is at least as fast as NCCL's best (ring, every protocol and instance
    count of the model), each timed by its own run at that size."""
    from smtcoll.msccl.reader import read_program

    out = tmp_path / "algos"
    r = cli("sweep", "-t", "ring:4", "-c", "allgather", "--sizes", "1KiB:64MiB", "--max-chunks", "2",
            "--timeout", "2", "-o", str(out), timeout=300)
    assert r.returncode == 0, r.stderr
    manifest = json.loads((tmp_path / "algos.sweep" / "manifest.json").read_text())
    model = cost.Model.from_dict(manifest["model"])
    topo = specs.resolve_topology("ring:4")
    m = cost.machine(topo, 1, model)
    coll = library.collective("allgather", 4)
    ring = next(c for c in constructions(topo, coll) if c.nccl == "ring")
    files = [f for f in manifest["files"] if f.get("mode", "outofplace") == "outofplace"]
    for size in (3000, 100_000, 3 << 20, 45 << 20, 63_000_000):
        [f] = [f for f in files if f["sizes"][0] <= size <= f["sizes"][1]]
        ours = cost.predict(read_program(out / f["file"]).program, m, model, size, size)
        best = min(t for proto in model.protocols for inst in model.instances
                   if (t := cost.schedule_time(ring.schedule, proto, inst, size, model)) is not None)
        assert ours is not None and ours.at(size) <= best, (size, f["file"])
