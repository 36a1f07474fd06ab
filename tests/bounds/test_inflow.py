"""The inflow bound (bounds/inflow.py): what enters a node late reaches few of its ranks in time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.machines import quad_allreduce

from smtcoll import library
from smtcoll.bounds import check_witness, inflow_bound, lower_bounds, reach_bound, search_bounds
from smtcoll.proofs import check_certificate
from smtcoll.proofs.certificate import write_certificate
from smtcoll.proofs.claim import Claim
from smtcoll.synth.exact.sums import groups, sums_schedule
from smtcoll.synth.scale import engine


def test_one_shared_nic_five_nodes_need_six_rounds_where_reach_says_four(tmp_path: Path) -> None:
    # K = 1 value enters a node a round, a GPU passes one on a round (F = 1, 2, 4), 16 contributions from
    # outside must reach 4 GPUs: 64. The reach ramp 1, 3, 8, 16: after 4 rounds 1*4 + 3*4 + 8*2 + 16*1 = 48.
    # After 5, the values of rounds 4 and 5 reach at most 2 + 1 GPUs: the fourth takes its 16 from rounds
    # 1..3, at most 1 + 3 + 8 = 12
    topo, coll = quad_allreduce(tmp_path, [[0, 1, 2, 3]], 5)
    b = inflow_bound(topo, coll)
    assert b.value == 6 and reach_bound(topo, coll).value == 4
    w = b.witness
    assert (w["entry"], w["fanout"], w["outside"], w["must"]) == (1, 1, 16, 64)
    assert w["inflow"] == [0, 1, 5, 18, 48, 96, 160] and w["early"][5:] == [12, 28]
    rounds = lower_bounds(topo, coll, lp=False).rounds
    assert rounds.value == 6 and rounds.witness["from"] == "inflow"
    assert search_bounds(topo, coll).least_steps(True, 1) == 6


def test_the_witness_is_recomputed_and_proof_check_refuses_a_changed_number(tmp_path: Path) -> None:
    topo, coll = quad_allreduce(tmp_path, [[0, 1, 2, 3]], 5)
    b = inflow_bound(topo, coll)
    assert check_witness("inflow", {"bound": "inflow", **b.witness}, topo, coll) == 6
    with pytest.raises(Exception, match="early"):
        check_witness("inflow", {"bound": "inflow", **b.witness, "early": [0, 0, 0, 1, 4, 16, 28]}, topo, coll)
    cert = write_certificate(Claim(rounds=5), topo, coll, tmp_path / "certs")
    res = check_certificate(cert)
    assert res.verdict == "ok" and "inflow" in " ".join(res.messages)
    doc = json.loads(cert.read_text())
    doc["witness"]["fanout"] = 3  # a port that passes on 3 a round would allow fewer rounds
    cert.write_text(json.dumps(doc))
    bad = check_certificate(cert)
    assert bad.verdict == "error" and "fanout" in " ".join(bad.messages)


def test_it_stays_at_or_below_schedules_that_verify(tmp_path: Path) -> None:
    # two NICs of two GPUs: the exact search finds 3 steps on 2 nodes, the bound is 3 (tight); the engine's
    # schedules on 2..6 nodes are never below it
    topo, coll = quad_allreduce(tmp_path, [[0, 1], [2, 3]], 2)
    assert inflow_bound(topo, coll).value == 3
    found, _, _ = sums_schedule(topo, coll, 3, 4, 10_000_000, None)
    assert found is not None and len(found.steps) == 3 and groups(topo, coll)
    for nodes in range(2, 7):
        topo, coll = quad_allreduce(tmp_path, [[0, 1], [2, 3]], nodes)
        b = inflow_bound(topo, coll)
        assert b.value is not None and b.value <= engine.synthesize(topo, coll).schedule.rounds


@pytest.mark.parametrize("name,nodes,value", [("a100", 4, 4), ("ndv2", 8, 8), ("dgx2", 4, 5)])
def test_built_in_machines_below_what_is_known(name: str, nodes: int, value: int) -> None:
    # schedules that verify: a100 x 4 4 steps, ndv2 x 8 8 and dgx2 x 4 7 (the exact sums search): the first
    # two optimal
    topo = library.topology(name, nodes)
    assert inflow_bound(topo, library.collective("allreduce", topo.ranks)).value == value


def test_it_applies_only_to_one_address_sums_on_several_nodes(tmp_path: Path) -> None:
    topo, _ = quad_allreduce(tmp_path, [[0, 1, 2, 3]], 3)
    assert inflow_bound(topo, library.collective("allgather", topo.ranks)).value is None
    assert inflow_bound(topo, library.collective("allreduce", topo.ranks, chunks=2)).value is None
    assert inflow_bound(library.topology("dgx1"), library.collective("allreduce", 8)).value is None
