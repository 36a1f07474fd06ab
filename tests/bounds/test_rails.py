"""The rails bound (bounds/rails.py): over NIC links alone a rank is reached only from its rail, so the paths of
its tree that take no link inside a node end at a few ranks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smtcoll import library
from smtcoll.bounds import check_witness, lower_bounds, rails_bound, reach_bound, search_bounds
from smtcoll.model import Collective, Nic, Topology
from smtcoll.proofs import check_certificate
from smtcoll.proofs.certificate import write_certificate
from smtcoll.proofs.claim import Claim
from smtcoll.synth.scale import engine


def _rails(gpus: int, nodes: int) -> tuple[Topology, Collective]:
    """Nodes of `gpus` GPUs on a switch (a port of one value a round each way), a NIC per GPU, GPU k of every
    node on rail k (a DGX H100's shape), and the one-address Allreduce."""
    hub = library.generate("hub-and-spoke", [gpus])
    node = Topology(f"rails{gpus}", gpus, hub.links, hub.switches, [Nic([k], [k], 1, k) for k in range(gpus)])
    topo = node.compose(nodes)
    return topo, library.collective("allreduce", topo.ranks)


def test_eight_gpus_three_nodes_need_four_rounds_where_reach_says_three() -> None:
    # 3 rounds: 27 paths from GPU 0, 24 contributions; the 8 paths that take no switch edge end at the 3 GPUs
    # of its rail, so at most 19 + 3 = 22
    topo, coll = _rails(8, 3)
    b = rails_bound(topo, coll)
    assert b.value == 4 and reach_bound(topo, coll).value == 3
    assert b.witness["mixed"] == [0, 1, 5, 19, 24] and b.witness["rail"] == [1, 3, 3, 3, 3]
    assert b.witness["reach"][3] == 22
    rounds = lower_bounds(topo, coll, lp=False).rounds
    assert rounds.value == 4 and rounds.witness["from"] == "rails"
    sb = search_bounds(topo, coll)
    assert sb.least_steps(True, 1) == 4 and sb.aim_steps() == 3  # the searches aim as before the rails bound
    assert engine.synthesize(topo, coll).schedule.rounds >= 4  # below a schedule that verifies


def test_the_witness_is_recomputed_and_proof_check_refuses_a_changed_number(tmp_path: Path) -> None:
    topo, coll = _rails(8, 3)
    b = rails_bound(topo, coll)
    assert check_witness("rails", {"bound": "rails", **b.witness}, topo, coll) == 4
    with pytest.raises(Exception, match="rail"):
        check_witness("rails", {"bound": "rails", **b.witness, "rail": [1, 2, 2, 2, 2]}, topo, coll)
    cert = write_certificate(Claim(rounds=3), topo, coll, tmp_path / "certs")
    res = check_certificate(cert)
    assert res.verdict == "ok" and "rails" in " ".join(res.messages)
    doc = json.loads(cert.read_text())
    doc["witness"]["mixed"][3] = 18
    cert.write_text(json.dumps(doc))
    bad = check_certificate(cert)
    assert bad.verdict == "error" and "mixed" in " ".join(bad.messages)


def test_it_binds_only_where_three_to_the_rounds_barely_covers_the_ranks() -> None:
    topo, coll = _rails(8, 4)  # 32: the holdings bound's 27 < 32 already says 4
    assert rails_bound(topo, coll).value == 4 == reach_bound(topo, coll).value
    topo, _ = _rails(8, 3)
    assert rails_bound(topo, library.collective("allgather", topo.ranks)).value is None
    assert rails_bound(topo, library.collective("allreduce", topo.ranks, chunks=2)).value is None
    a100 = library.topology("a100", 3)  # built-in machines: never above what the others prove
    coll = library.collective("allreduce", a100.ranks)
    b = rails_bound(a100, coll)
    assert b.value is not None and b.value <= search_bounds(a100, coll).least_steps(True, 1)
