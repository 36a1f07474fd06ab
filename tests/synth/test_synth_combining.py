"""Combining collectives: exact reductions, duals, reduce-then-broadcast Allreduce on the topologies SCCL
never answers."""

from __future__ import annotations

import pytest

from smtcoll import library
from smtcoll.check.schedule import check_schedule
from smtcoll.synth.combining import dual_collective
from smtcoll.synth.exact import strategies


def _least(topo: str, coll: str, **kw):
    t = library.topology(topo)
    return strategies.least_steps(t, library.collective(coll, t.ranks, kw.pop("root", None)), **kw)


@pytest.mark.parametrize("topo, steps", [("line:4", 3), ("star:4", 2), ("ring:4", 2), ("dgx1", 2)])
def test_allreduce_least_steps(topo: str, steps: int) -> None:
    r = _least(topo, "allreduce")
    assert r.status == "found"
    assert len(r.schedule.steps) == steps
    assert check_schedule(r.schedule).verdict == "ok"


def test_allreduce_ring8_needs_more_than_the_diameter() -> None:
    r = _least("ring:8", "allreduce")
    assert r.status == "found"
    assert check_schedule(r.schedule).verdict == "ok"
    assert len(r.schedule.steps) == 5
    assert any(a.steps == 4 and a.verdict == "unsat" for a in r.attempts)


@pytest.mark.parametrize("topo, coll, steps", [
    ("line:4", "reduce", 3), ("star:4", "reduce", 1), ("dgx1", "reduce", 2),
    ("ring:4", "reducescatter", 2), ("dgx1", "reducescatter", 2), ("line:4", "reducescatter", 3),
])
def test_reduce_and_reducescatter(topo: str, coll: str, steps: int) -> None:
    r = _least(topo, coll)
    assert r.status == "found"
    assert len(r.schedule.steps) == steps
    assert check_schedule(r.schedule).verdict == "ok"


def test_reduce_uses_the_dual() -> None:
    r = _least("line:4", "reduce", root=1)
    assert r.attempts[-1].method == "dual"


def test_dual_exists_only_for_reduce_shapes() -> None:
    assert dual_collective(library.collective("reduce", 4)) is not None
    assert dual_collective(library.collective("reducescatter", 4, chunks=2)) is not None
    assert dual_collective(library.collective("allreduce", 4)) is None
    assert dual_collective(library.collective("allgather", 4)) is None


def test_allreduce_composed_variant_is_reported() -> None:
    t = library.topology("ring:4")
    r = strategies.least_steps(t, library.collective("allreduce", 4), chunks=4)
    assert r.status == "found"
    methods = {v.method: v for v in r.variants}
    assert methods["reducescatter+allgather"].steps == 4
    assert methods["direct"].steps is not None and methods["direct"].steps <= 4


def test_allreduce_with_chunks_instance() -> None:
    t = library.topology("line:4")
    r = strategies.instance(t, library.collective("allreduce", 4), 3, 6, 2)
    assert r.status == "found" and r.schedule is not None
    assert check_schedule(r.schedule).verdict == "ok"


@pytest.mark.parametrize("topo", ["line:4", "star:4", "ring:5", "hypercube:2"])
@pytest.mark.parametrize("coll, root", [("broadcast", 1), ("reduce", 2), ("scatter", 0), ("gather", 3),
                                        ("allgather", None), ("alltoall", None), ("reducescatter", None),
                                        ("allreduce", None)])
def test_every_builtin_collective_is_synthesized_and_checked(topo: str, coll: str, root: int | None) -> None:
    t = library.topology(topo)
    r = strategies.least_steps(t, library.collective(coll, t.ranks, root))
    assert r.status == "found" and r.schedule is not None
    assert r.optimal.proved
    assert check_schedule(r.schedule).verdict == "ok"
