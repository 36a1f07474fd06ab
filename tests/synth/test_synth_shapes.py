"""The fast paths (greedy, symmetric and shortest-route shapes) and the instances SCCL never answers."""

from __future__ import annotations

import pytest

from smtcoll import library
from smtcoll.check.schedule import check_schedule
from smtcoll.synth.exact import strategies
from smtcoll.synth.exact.symmetry import free_group
from smtcoll.synth.greedy import greedy_schedule


def _least(topo: str, coll: str, chunks: int = 1):
    t = library.topology(topo)
    return strategies.least_steps(t, library.collective(coll, t.ranks), chunks=chunks)


@pytest.mark.parametrize("topo, coll, chunks, steps", [
    ("dgx2", "allgather", 1, 15),                # 15 chunks through one switch in-port
    ("fully-connected:8", "allgather", 4, 4),    # 28 chunks over 7 links
    ("fully-connected:16", "alltoall", 1, 1),
    ("ring:8", "alltoall", 1, 8),                # 128 chunk-hops over 16 links
    ("line:8", "alltoall", 1, 16),               # 16 chunks over the middle link
    ("torus2d:3x3", "allgather", 1, 2),
    ("torus2d:4x4", "allgather", 1, 4),
    ("torus2d:5x5", "allgather", 1, 6),
    ("torus2d:6x6", "allgather", 1, 9),
    ("torus2d:4x8", "allgather", 1, 8),
    ("mesh2d:4x4", "allgather", 1, 8),
    ("torus2d:8x8", "allgather", 1, 16),         # open before: 16 or 17
])
def test_optimal_steps(topo: str, coll: str, chunks: int, steps: int) -> None:
    r = _least(topo, coll, chunks)
    assert r.status == "found"
    assert len(r.schedule.steps) == steps
    assert r.optimal.proved
    assert check_schedule(r.schedule).verdict == "ok"


def test_groups() -> None:
    assert len(free_group(library.topology("torus2d:4x4")) or []) == 16
    assert len(free_group(library.topology("dgx1")) or []) == 4
    assert free_group(library.topology("amd8")) is None
    assert free_group(library.topology("dgx2")) is None  # switch groups: not used


def test_greedy_is_valid_or_none() -> None:
    for name, coll in [("dgx1", "alltoall"), ("torus2d:4x4", "allgather"), ("star:8", "scatter")]:
        t = library.topology(name)
        g = greedy_schedule(t, library.collective(coll, t.ranks), 40)
        assert g is not None and check_schedule(g).verdict == "ok"
    assert greedy_schedule(library.topology("ring:4"), library.collective("allreduce", 4), 10) is None


def test_a_shape_never_proves_anything() -> None:
    # DGX-1 Allgather with 2 steps, 7 rounds, 6 chunks: the symmetric shape fails first, the exact
    # encoding decides
    t = library.topology("dgx1")
    r = strategies.instance(t, library.collective("allgather", 8), 2, 7, 6)
    assert r.status == "infeasible"
    assert [a.method for a in r.attempts] == ["symmetric", "direct"]
    assert [a.verdict for a in r.attempts] == ["no-shape", "unsat"]


@pytest.mark.slow
def test_dgx1_alltoall_8_8_3() -> None:
    t = library.topology("dgx1")
    r = strategies.instance(t, library.collective("alltoall", 8), 8, 8, 3)
    assert r.status == "found" and r.schedule is not None
    assert check_schedule(r.schedule).verdict == "ok"
    assert r.schedule.rounds <= 8
