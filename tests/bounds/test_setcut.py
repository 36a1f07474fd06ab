"""Rank-set cuts (bounds/setcut.py): what a set of ranks must receive or send in all, shared ports once."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from smtcoll import library, specs
from smtcoll.bounds import check_witness, lower_bounds, search_bounds, setcut_bound
from smtcoll.bounds.lp import lp_bound
from smtcoll.errors import ModelError
from smtcoll.proofs import Claim, check_certificate
from smtcoll.proofs.certificate import write_certificate
from smtcoll.synth.door import engine_result

HELDOUT = Path(__file__).resolve().parents[2] / "benchmarks" / "topologies" / "heldout"


def _machine(name: str, nodes: int):
    return specs.resolve_topology(str(HELDOUT / f"{name}.toml"), nodes)


def test_four_gpus_behind_one_nic_receive_through_their_ports_and_the_nic_once(tmp_path):
    topo = _machine("shared2nic8", 2)
    coll = library.collective("allgather", topo.ranks)
    b = setcut_bound(topo, coll)
    # 4 x 15 chunks through 4 switch in-ports and 1 shared NIC a round; each GPU alone proves only 15 / 2
    assert (b.value, b.witness["family"], b.witness["must"], b.witness["capacity"]) == (12, "arrivals", 60, 5)
    assert len(b.witness["inside"]) == 4 and any(n.startswith("nic") for n in b.witness["group_names"])
    assert search_bounds(topo, coll).least_steps(True, 1) == 12
    schedule = engine_result(topo, coll, 1)[0].schedule  # checked before it is returned
    assert schedule is not None and schedule.rounds >= 12
    # the certificate "no schedule in 11 rounds" rests on it; proof check recomputes it and refuses changes
    path = write_certificate(Claim(rounds=11), topo, coll, tmp_path)
    data = json.loads(path.read_text())
    assert data["witness"]["bound"] == "setcut"
    assert check_certificate(path).verdict == "ok"
    for key, change in (("must", 61), ("capacity", 4), ("per_rank", [16, 15, 15, 15]), ("value", 13)):
        bad = json.loads(path.read_text())
        bad["witness"][key] = change
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        assert check_certificate(tmp_path / "bad.json").verdict == "error", key
    bad = json.loads(path.read_text())
    bad["witness"]["groups"] = bad["witness"]["groups"][:-1]  # drop the NIC: its link is covered by nothing
    bad["witness"]["group_names"] = bad["witness"]["group_names"][:-1]
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    assert "covered by no group" in " ".join(check_certificate(tmp_path / "bad.json").messages)


@pytest.mark.parametrize("name", ["allgather", "reducescatter"])
def test_a_socket_link_with_its_tail_is_what_the_engine_reaches(name):
    topo = _machine("pcie2s8", 2)
    coll = library.collective(name, topo.ranks)
    b = setcut_bound(topo, coll)
    # 12 addresses cross one socket link (1 a round), each needed by (or summed from) 4 GPUs: a crossing in
    # the last (first) step serves one of them, so 12 + 1
    assert (b.value, b.witness["must"], b.witness["capacity"], b.witness["copies"]) == (13, 12, 1, 4)
    assert b.witness["family"] == ("entry" if name == "allgather" else "exit")
    assert check_witness("setcut", b.witness, topo, coll) == 13
    schedule = engine_result(topo, coll, 1)[0].schedule
    assert schedule is not None and len(schedule.steps) == schedule.rounds == 13  # at the bound: optimal


@pytest.mark.parametrize(("topo", "name"), [("dgx1", "allgather"), ("ndv2", "alltoall"), ("a100", "reducescatter"),
                                            ("star:6", "allreduce"), ("ring:6", "gather")])
def test_never_above_a_schedule_that_verifies_nor_below_the_bounds_it_generalizes(topo, name):
    nodes = 2 if topo == "ndv2" else 1
    t = library.topology(topo, nodes)
    coll = library.collective(name, t.ranks, root=0 if name == "gather" else None)
    b = setcut_bound(t, coll)
    schedule = engine_result(t, coll, 1)[0].schedule
    assert schedule is not None and b.value is not None and b.value <= schedule.rounds
    rounds = lower_bounds(t, coll, lp=False)
    # single ranks are candidates: the per-rank receive bound is a special case
    assert b.value >= rounds.receive.value


def test_a_witness_that_names_a_link_outside_the_topology_or_an_unknown_family_is_refused():
    topo = _machine("shared2nic8", 2)
    coll = library.collective("allgather", topo.ranks)
    w = dict(setcut_bound(topo, coll).witness)
    with pytest.raises(ModelError, match="no link"):
        check_witness("setcut", {**w, "links": [[0, 0]]}, topo, coll)
    with pytest.raises(ModelError, match="family"):
        check_witness("setcut", {**w, "family": "sideways"}, topo, coll)
    # a caller that edits its witness (as above, or in its lists) leaves the next caller's alone
    w["inside"].append(99)
    assert 99 not in setcut_bound(topo, coll).witness["inside"]


def test_a_routing_that_meets_the_cut_is_the_lp_optimum_without_solving_it():
    topo = library.topology("hub-and-spoke:8")
    coll = library.collective("alltoall", topo.ranks)
    solved = lp_bound(topo, coll)
    shortcut = lp_bound(topo, coll, at_least=Fraction(7))
    assert shortcut.witness["solver"].startswith("none") and solved.witness["solver"] == "scipy HiGHS"
    assert shortcut.value == solved.value == 7 and shortcut.per_chunk == 7
    # a cut below the routing's time leaves the LP to be solved
    assert lp_bound(topo, coll, at_least=Fraction(6)).witness["solver"] == "scipy HiGHS"


def test_one_pcie_box_gets_the_exact_searchs_optimum():
    topo = _machine("pcie2s8", 1)
    for name in ("allgather", "reducescatter"):
        # 5 steps is the exact search's optimum (benchmarks/setcut_soundness.py --exact); the cuts said 4
        assert search_bounds(topo, library.collective(name, topo.ranks)).least_steps(True, 1) == 5


@pytest.mark.parametrize("name", ["allgather", "reducescatter"])
def test_the_last_chunk_into_a_node_still_crosses_it_where_no_nic_group_names_the_node(name):
    topo = library.topology("ndv2", 2)  # one NIC link each way: no NIC group, so the entry bound sees one node
    coll = library.collective(name, topo.ranks)
    b = setcut_bound(topo, coll)
    # 8 chunks through GPU 1 <- GPU 0 of the other node, 1 a round, then 2 hops on to GPU 7: 10, the engine's;
    # ReduceScatter: GPU 7's share of each of 8 sums goes 2 hops to GPU 0 before it can leave
    assert (b.value, b.witness["must"], b.witness["capacity"], b.witness["hops"]) == (10, 8, 1, 2)
    assert b.witness["family"] == ("entry" if name == "allgather" else "exit")
    schedule = engine_result(topo, coll, 1)[0].schedule
    assert schedule is not None and len(schedule.steps) == schedule.rounds == 10
    with pytest.raises(ModelError, match="hops"):
        check_witness("setcut", {**b.witness, "hops": 3}, topo, coll)


def test_the_last_chunk_into_a_switch_node_through_one_nic_must_still_spread_inside(tmp_path):
    # pcie4slow x 4: 4 GPUs on a switch (one chunk out of a GPU a round), one NIC: 12 chunks enter a node one a
    # round, the last at one GPU, which holds it with at most 1 + 1 + 1 others a round later, 4 the round after
    topo = _machine("pcie4slow", 4)
    coll = library.collective("allgather", topo.ranks)
    b = setcut_bound(topo, coll)
    assert (b.value, b.witness["family"], b.witness["spread"], b.witness["fanout"]) == (14, "entry", 2, 1)
    schedule = engine_result(topo, coll, 1)[0].schedule  # the NICs bringing what their node lacks: 14
    assert schedule is not None and len(schedule.steps) == schedule.rounds == 14
    path = write_certificate(Claim(rounds=13), topo, coll, tmp_path)
    assert check_certificate(path).verdict == "ok"
    for key, change in (("spread", 3), ("fanout", 0), ("value", 15)):
        bad = json.loads(path.read_text())
        bad["witness"][key] = change
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        assert check_certificate(tmp_path / "bad.json").verdict == "error", key
    bad = json.loads(path.read_text())
    del bad["witness"]["spread"]  # the tail of a plain entry cut proves 13, not the 14 it records
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    assert check_certificate(tmp_path / "bad.json").verdict == "error"


def test_the_spread_counts_the_first_crossings_a_long_last_step_shares():
    # a last step of m rounds may carry one chunk over the one NIC m times; then m - 1 others cross in it or
    # earlier. Every (end e, length m) is taken: 16 chunks through 2 NICs into dualplane8's 8 GPUs, each GPU
    # passing a chunk to 3 others a round: 8 + 2 (two chunks cross first in round 8, at one GPU each)
    from smtcoll.bounds.setcut import spread_rounds

    topo = _machine("dualplane8", 3)
    assert spread_rounds(topo, range(8), 2, 8, 16) == (2, 3)
    assert spread_rounds(topo, range(8), 2, 8, 15) == (1, 3)  # 15: the last round's one chunk may cross twice
    pcie = _machine("pcie8", 8)
    assert spread_rounds(pcie, range(8), 1, 8, 56) == (3, 1)  # 1, 3, 7, 8: 59, what the engine reaches
