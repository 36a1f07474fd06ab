"""The hubs bound (bounds/hubs.py): where the reach bound says 3 rounds, every rank must gather at once, and a
node's round-1 sends feed either its own ranks' trees or the hubs whose values the other nodes' ranks need."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smtcoll import library
from smtcoll.bounds import check_witness, hubs_bound, lower_bounds, reach_bound, search_bounds
from smtcoll.check.schedule import check_schedule
from smtcoll.model import Collective, Nic, Topology
from smtcoll.proofs import check_certificate
from smtcoll.proofs.certificate import write_certificate
from smtcoll.proofs.claim import Claim
from smtcoll.synth.scale import engine


def _torus_nodes(nodes: int) -> tuple[Topology, Collective]:
    """Nodes of a 3 x 4 torus (4 links a GPU, every GPU within 3 hops of every other), a NIC per GPU into any GPU
    of the other nodes, and the one-address Allreduce."""
    grid = library.generate("torus2d", [3, 4])
    node = Topology("torus3x4nic", grid.ranks, grid.links, grid.switches, [Nic([k], [k], 1, 0) for k in range(12)])
    topo = node.compose(nodes)
    return topo, library.collective("allreduce", topo.ranks)


def test_six_torus_nodes_need_four_rounds_where_reach_says_three_and_the_engine_builds_more() -> None:
    # 72 GPUs: a GPU alone could gather them in 3 rounds (reach); all at once cannot: every GPU is tight (all 12 of
    # its node within 3 hops), Psi = 22 each with l_5 = 28 for the 72 targets of mult 5: 72 x 22 + 28 x 72 = 3600
    # < 72 x (72 - 21) = 3672
    topo, coll = _torus_nodes(6)
    assert reach_bound(topo, coll).value == 3
    b = hubs_bound(topo, coll)
    assert b.value == 4
    w = b.witness
    assert w["ramp2"] == 21 and set(w["psi"]) == {"22"} and w["targets"] == [[5, 72]] and w["multipliers"] == [[5, 28]]
    assert (w["total"], w["must"]) == ("3600", 3672)
    result = engine.synthesize(topo, coll)
    assert check_schedule(result.schedule).verdict == "ok" and result.schedule.rounds >= 4  # below a schedule
    assert hubs_bound(*_torus_nodes(5)).value is None  # 60 GPUs: 3 rounds not excluded


def test_mi250_four_nodes_need_four_rounds_and_synth_reports_it() -> None:
    # the 16 GCDs with 12 of their node within 3 hops (4, 7, 12, 15 of each node): Psi = 21 each, l = 4 / 10 for
    # the 32 / 16 targets next to one / two of them: 336 + 128 + 160 = 624 < 16 x (64 - 24)
    topo = library.topology("mi250", 4)
    coll = library.collective("allreduce", topo.ranks)
    b = hubs_bound(topo, coll)
    assert b.value == 4 and b.witness["total"] == "624" and b.witness["must"] == 640
    assert b.witness["tight"][:4] == [4, 7, 12, 15] and set(b.witness["psi"]) == {"21"}
    rounds = lower_bounds(topo, coll, lp=False).rounds
    assert rounds.value == 4 and rounds.witness["from"] == "hubs"
    sb = search_bounds(topo, coll)
    assert sb.least_steps(True, 1) == 4 and "hubs" in sb.steps_why(True, 1)
    assert sb.aim_steps() == 3  # the searches aim as before the bound


def test_the_witness_is_recomputed_and_proof_check_refuses_a_changed_number(tmp_path: Path) -> None:
    topo, coll = _torus_nodes(6)
    b = hubs_bound(topo, coll)
    assert check_witness("hubs", {"bound": "hubs", **b.witness}, topo, coll) == 4
    with pytest.raises(Exception, match="psi"):
        check_witness("hubs", {"bound": "hubs", **b.witness, "psi": ["21"] * 72}, topo, coll)
    cert = write_certificate(Claim(rounds=3), topo, coll, tmp_path / "certs")
    res = check_certificate(cert)
    assert res.verdict == "ok" and "hubs" in " ".join(res.messages)
    doc = json.loads(cert.read_text())
    doc["witness"]["total"] = "3599"
    cert.write_text(json.dumps(doc))
    bad = check_certificate(cert)
    assert bad.verdict == "error" and "total" in " ".join(bad.messages)


def test_it_applies_only_where_the_reach_bound_is_three_for_a_one_address_sum() -> None:
    for nodes in (2, 3, 5):  # x 2: 3 rounds in longer steps not excluded; x 3: the hubs count; x 5: reach says 4
        topo = library.topology("mi250", nodes)
        assert hubs_bound(topo, library.collective("allreduce", topo.ranks)).value is None
    topo = library.topology("mi250", 4)
    assert hubs_bound(topo, library.collective("allgather", topo.ranks)).value is None
    assert hubs_bound(topo, library.collective("allreduce", topo.ranks, chunks=2)).value is None
