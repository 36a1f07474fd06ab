"""The ports bound (bounds/ports.py): where only some GPUs of a switch node take values from other nodes,
they cannot feed every other GPU's last two rounds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smtcoll import library
from smtcoll.bounds import check_witness, lower_bounds, ports_bound, reach_bound, search_bounds
from smtcoll.model import Collective, Nic, Topology
from smtcoll.proofs import check_certificate
from smtcoll.proofs.certificate import write_certificate
from smtcoll.proofs.claim import Claim
from smtcoll.synth.scale import engine


def _switch_pairs(gpus: int, nodes: int) -> tuple[Topology, Collective]:
    """Nodes of `gpus` GPUs on a switch (a port of one value a round each way), NIC k from GPU 2k + 1 to GPU
    2k of the other nodes (the DGX-2's shape at half its size), and the one-address Allreduce."""
    hub = library.generate("hub-and-spoke", [gpus])
    node = Topology(f"switchpairs{gpus}", gpus, hub.links, hub.switches,
                    [Nic([2 * k + 1], [2 * k], 1, k) for k in range(gpus // 2)])
    topo = node.compose(nodes)
    return topo, library.collective("allreduce", topo.ranks)


def test_eight_gpus_six_nodes_need_six_rounds_where_reach_says_five() -> None:
    # an odd GPU (no NIC) may hold all 48 after 5 rounds only if the GPU that sends to it in round 5, that
    # one's sender in round 4 and its own sender in round 4 are even (NIC) GPUs: 48, else at most 43, 38 or
    # 30. So in round 4 the 4 even GPUs must send to the 4 odd ones and to the 4 even ones that feed them
    topo, coll = _switch_pairs(8, 6)
    b = ports_bound(topo, coll)
    assert b.value == 6 and reach_bound(topo, coll).value == 5
    w = b.witness
    assert (w["need"], w["rich"], w["receivers"]) == ([1, 3, 5, 7], [0, 2, 4, 6], 8)
    assert w["patterns"]["1"] == [48, 43, 43, 38, 30, 25, 25, 20]
    rounds = lower_bounds(topo, coll, lp=False).rounds
    assert rounds.value == 6 and rounds.witness["from"] == "ports"
    assert search_bounds(topo, coll).least_steps(True, 1) == 6
    assert engine.synthesize(topo, coll).schedule.rounds >= 6  # below a schedule that verifies (7)


def test_the_witness_is_recomputed_and_proof_check_refuses_a_changed_number(tmp_path: Path) -> None:
    topo, coll = _switch_pairs(8, 6)
    b = ports_bound(topo, coll)
    assert check_witness("ports", {"bound": "ports", **b.witness}, topo, coll) == 6
    with pytest.raises(Exception, match="need"):
        check_witness("ports", {"bound": "ports", **b.witness, "need": [1, 3, 5]}, topo, coll)
    cert = write_certificate(Claim(rounds=5), topo, coll, tmp_path / "certs")
    res = check_certificate(cert)
    assert res.verdict == "ok" and "ports" in " ".join(res.messages)
    doc = json.loads(cert.read_text())
    doc["witness"]["receivers"] = 9
    cert.write_text(json.dumps(doc))
    bad = check_certificate(cert)
    assert bad.verdict == "error" and "receivers" in " ".join(bad.messages)


def test_dgx2_x9_needs_seven_rounds() -> None:
    # the engine's 10 steps were 1.67x the reach bound's 6; 10 / 7 = 1.43
    topo = library.topology("dgx2", 9)
    b = ports_bound(topo, library.collective("allreduce", topo.ranks))
    assert b.value == 7 and b.witness["patterns"]["1"][:4] == [144, 130, 130, 112]


def test_it_applies_only_to_switch_ports_and_one_address_sums() -> None:
    topo, coll = _switch_pairs(8, 8)
    assert ports_bound(topo, coll).value is None  # 64 contributions: an odd GPU may reach them with an odd sender
    topo, _ = _switch_pairs(8, 6)
    assert ports_bound(topo, library.collective("allgather", topo.ranks)).value is None
    assert ports_bound(topo, library.collective("allreduce", topo.ranks, chunks=2)).value is None
    mi = library.topology("mi250", 3)  # xGMI links: a GCD takes 3 or 4 values a round from its node
    assert "more than one value" in ports_bound(mi, library.collective("allreduce", mi.ranks)).note
