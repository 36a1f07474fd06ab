"""Alltoall on machines a translation maps onto themselves (issue 24): rank 0's routes timed by an integer
program and translated to every rank reach the flow LP's bound on a100 x N, where the LP's rounded paths
were 20 % above it; every schedule checked, the same schedule every run."""

from __future__ import annotations

import pytest

from smtcoll import library
from smtcoll.bounds import lower_bounds
from smtcoll.check.schedule import check_schedule
from smtcoll.synth.scale import engine, orbit


@pytest.mark.parametrize("nodes, chunks, rounds", [(2, 1, 10), (2, 2, 20), (3, 1, 16), (4, 1, 24)])
def test_a100_alltoall_at_the_lp_bound(nodes: int, chunks: int, rounds: int) -> None:
    t = library.topology("a100", nodes)
    r = engine.synthesize(t, library.collective("alltoall", t.ranks, None, chunks))
    assert check_schedule(r.schedule).verdict == "ok"
    # from 4 nodes the LP-routed paths, their rounds chosen by an integer program, reach the bound first
    assert r.method.startswith("one rank's routes" if nodes < 4 else ("one rank's routes", "LP-routed"))
    assert len(r.schedule.steps) == r.schedule.rounds == rounds == r.bounds.rounds(chunks)


def test_the_bound_it_meets_is_the_one_bounds_proves() -> None:
    t = library.topology("a100", 2)
    full = lower_bounds(t, library.collective("alltoall", t.ranks))
    assert full.rounds.value == 10 and full.rounds.witness["from"] == "lp"


def test_ten_rounds_on_a100_x2_go_over_the_nic_and_back() -> None:
    # 88 NVSwitch sends per node against 80 slots in 10 rounds: some chunk for a GPU of its own node must
    # leave the node and come back (two NIC hops), or 10 rounds are impossible
    t = library.topology("a100", 2)
    s = orbit.orbit_alltoall(t, library.collective("alltoall", t.ranks), 10, 10)
    assert s is not None
    at: dict[int, int] = {}
    for step in s.steps:
        for send in step.sends:
            at.setdefault(send.chunk, send.src)
    out_and_back = {send.chunk for step in s.steps for send in step.sends
                    if send.src // 8 != send.dst // 8 and at[send.chunk] // 8 == send.dst // 8}
    assert out_and_back


def test_deterministic_and_none_where_no_translation_fits() -> None:
    t = library.topology("a100", 2)
    coll = library.collective("alltoall", t.ranks)
    a, b = orbit.orbit_alltoall(t, coll, 10, 10), orbit.orbit_alltoall(t, coll, 10, 10)
    assert a is not None and b is not None and a.steps == b.steps
    # mi250's xGMI links are not invariant under a GPU shift; dgx2's NICs join odd to even GPUs only
    for name, nodes in (("mi250", 2), ("dgx2", 2)):
        m = library.topology(name, nodes)
        assert orbit.orbit_alltoall(m, library.collective("alltoall", m.ranks), 1, 100) is None
    # fewer rounds than the bound: nothing (the integer program is infeasible), never a wrong schedule
    assert orbit.orbit_alltoall(t, coll, 9, 9) is None
