"""Results of the synthesizer: step counts, optimality claims and the Pareto frontier (never timings)."""

from __future__ import annotations

import pytest

from smtcoll import library
from smtcoll.bounds import search_bounds as bounds
from smtcoll.check.schedule import check_schedule
from smtcoll.synth.exact import strategies


def _least(topo: str, coll: str, **kw):
    t = library.topology(topo)
    return strategies.least_steps(t, library.collective(coll, t.ranks, kw.pop("root", None)), **kw)


@pytest.mark.parametrize("topo, coll, steps", [
    ("ring:4", "allgather", 2),
    ("ring:8", "allgather", 4),
    ("line:4", "allgather", 3),
    ("star:8", "allgather", 7),
    ("dgx1", "allgather", 2),
    ("dgx1", "alltoall", 3),
    ("fully-connected:8", "alltoall", 1),
    ("hypercube:3", "allgather", 3),
    ("star:4", "broadcast", 1),
    ("line:4", "gather", 3),
    ("line:4", "scatter", 3),
])
def test_least_steps(topo: str, coll: str, steps: int) -> None:
    r = _least(topo, coll)
    assert r.status == "found"
    assert len(r.schedule.steps) == steps
    assert r.optimal.steps == steps and r.optimal.proved
    assert check_schedule(r.schedule).verdict == "ok"


def test_star_allgather_starts_at_the_receive_bound() -> None:
    # every leaf receives 7 chunks through one link: 7 steps without any solver call below it
    r = _least("star:8", "allgather")
    assert [a.steps for a in r.attempts] == [7]
    assert "rank" in r.optimal.why and "7 chunks" in r.optimal.why


@pytest.mark.parametrize("topo, coll", [("ring:4", "alltoall"), ("ring:8", "allreduce"), ("line:4", "alltoall")])
def test_every_step_count_below_is_proved_impossible(topo: str, coll: str) -> None:
    r = _least(topo, coll)
    assert r.status == "found" and r.optimal.proved
    b = bounds(library.topology(topo), library.collective(coll, library.topology(topo).ranks))
    found = len(r.schedule.steps)
    exact_unsat = {a.steps for a in r.attempts if a.method == "direct" and a.verdict == "unsat"}
    for s in range(1, found):
        assert s < b.least_steps() or s in exact_unsat


def test_bounds_match_the_known_cuts() -> None:
    line = bounds(library.topology("line:8"), library.collective("alltoall", 8))
    ring = bounds(library.topology("ring:8"), library.collective("alltoall", 8))
    dgx2 = bounds(library.topology("dgx2"), library.collective("allgather", 16))
    assert line.least_steps() == 16
    assert ring.least_steps() == 8
    assert dgx2.least_steps() == 15


def test_synth_and_bounds_agree_on_the_a100_pair_allgather() -> None:
    # the receive bound proves 8 rounds (15 chunks into a GPU at 2 per round): the greedy 8 is optimal
    t = library.topology("a100", 2)
    r = strategies.least_steps(t, library.collective("allgather", t.ranks))
    assert r.status == "found" and r.schedule is not None
    assert len(r.schedule.steps) == 8 and r.optimal.proved
    assert r.lower_bound is not None and r.lower_bound.least_steps == 8 and r.lower_bound.rounds == 8


def test_steps_means_the_same_in_bounds_and_synth() -> None:
    from smtcoll.bounds import lower_bounds

    t = library.topology("ring:8")
    coll = library.collective("alltoall", 8)
    lb = strategies.least_steps(t, coll).lower_bound
    both = lower_bounds(t, coll)
    assert lb is not None and lb.steps == both.steps.value == 4  # any rounds
    assert lb.rounds == both.rounds.value == 8 == lb.least_steps


def test_least_steps_exhausted_is_a_proof() -> None:
    r = _least("line:4", "allgather", max_steps=2)
    assert r.status == "infeasible"
    assert "no schedule with at most 2 steps" in r.message
    assert r.optimal.proved


def test_instance_sat_and_unsat() -> None:
    t = library.topology("dgx1")
    ag = library.collective("allgather", 8)
    found = strategies.instance(t, ag, 3, 4, 3)
    assert found.status == "found" and found.schedule is not None
    assert found.schedule.rounds <= 4 and len(found.schedule.steps) == 3
    assert check_schedule(found.schedule).verdict == "ok"
    assert strategies.instance(t, ag, 2, 4, 3).status == "infeasible"
    # below the receive bound: answered by the bound, no solver call
    r = strategies.instance(t, ag, 3, 3, 3)
    assert r.status == "infeasible" and not r.attempts


def test_pareto_dgx1_allgather_matches_sccl() -> None:
    t = library.topology("dgx1")
    r = strategies.pareto(t, library.collective("allgather", 8), max_chunks=6)
    assert r.status == "found"
    assert [(p.steps, p.rounds, p.chunks) for p in r.points] == [(2, 3, 2), (3, 7, 6)]
    assert r.optimal.proved
    for p in r.points:
        assert p.schedule is not None and check_schedule(p.schedule).verdict == "ok"
    assert all(p.why for p in r.pruned)


def test_pareto_small_ring() -> None:
    t = library.topology("ring:4")
    r = strategies.pareto(t, library.collective("allgather", 4), max_chunks=2)
    # 2 steps need 2 rounds per chunk? no: ring:4 allgather receives 3 chunks over 2 links: R/C >= 3/2
    assert next((p.steps, p.rounds, p.chunks) for p in r.points)[0] == 2
    q = [p.rounds / p.chunks for p in r.points if p.rounds is not None]
    assert len(q) == len(r.points) and q == sorted(q, reverse=True) and q[-1] >= 1.5
