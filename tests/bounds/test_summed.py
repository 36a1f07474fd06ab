"""The summed bound (bounds/summed.py): every rank's set summed grows at most by what is sent a round, and every
rank must end with every contribution."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from smtcoll import library
from smtcoll.bounds import check_witness, lower_bounds, search_bounds, summed_bound
from smtcoll.bounds.summed import capacities
from smtcoll.check.schedule import check_schedule
from smtcoll.model import Collective, Nic, Topology
from smtcoll.proofs import check_certificate
from smtcoll.proofs.certificate import write_certificate
from smtcoll.proofs.claim import Claim
from smtcoll.synth.scale import engine


def _switch_pairs(gpus: int, nodes: int) -> tuple[Topology, Collective]:
    """Nodes of one switch (a port of one value a round in and out per GPU), a NIC per GPU pair on its own rail,
    and the one-address Allreduce."""
    hub = library.generate("hub-and-spoke", [gpus])
    node = Topology(f"switch{gpus}pairs", gpus, hub.links, hub.switches,
                    [Nic([2 * k, 2 * k + 1], [2 * k, 2 * k + 1], 1, k) for k in range(gpus // 2)])
    topo = node.compose(nodes)
    return topo, library.collective("allreduce", topo.ranks)


def test_a_36_gpu_switch_with_pair_nics_needs_six_rounds_at_five_nodes_where_the_others_say_five() -> None:
    # 180 GPUs, 90 NICs: S = 180, 450, 1170, 3150, 8730, 24750 < 180 x 180 after 5 rounds
    topo, coll = _switch_pairs(36, 5)
    b = summed_bound(topo, coll)
    assert b.value == 6
    w = b.witness
    assert (w["out"], w["shared"], w["take"]) == (1, 90, 2)
    assert w["summed"] == [180, 450, 1170, 3150, 8730, 24750, 32400] and w["must"] == 32400
    assert w["ramp"] == [1, 3, 9, 27, 81, 180]
    sb = search_bounds(topo, coll)
    assert attrs.evolve(sb, summed=None).least_steps(True, 1) == 5  # reach, inflow, rails
    assert sb.least_steps(True, 1) == 6 and "summed" in sb.steps_why(True, 1)
    assert sb.aim_steps() == 5  # the searches aim as before the bound
    rounds = lower_bounds(topo, coll, lp=False).rounds
    assert rounds.value == 6 and rounds.witness["from"] == "summed"


def test_the_sum_of_a_checked_schedule_stays_under_the_recursion_round_by_round() -> None:
    # the engine's schedule on 4 nodes of an 8-GPU switch with pair NICs: every step one round; the sets it
    # holds, summed after each round, never exceed S(t) (and it needs at least the bound's rounds)
    topo, coll = _switch_pairs(8, 4)
    b = summed_bound(topo, coll)
    s = engine.synthesize(topo, coll).schedule
    assert check_schedule(s).verdict == "ok" and all(st.rounds == 1 for st in s.steps)
    assert s.rounds >= int(b.value or 0) and b.value == 4
    out, shared, take = capacities(topo)
    held = [frozenset([r]) for r in range(topo.ranks)]
    total, ramp = topo.ranks, 1
    for st in s.steps:
        got = [set(h) for h in held]
        for x in st.sends:
            got[x.dst] |= held[x.src]
        total, ramp = min(topo.ranks ** 2, total * (1 + out) + shared * ramp), min(topo.ranks, ramp * (1 + take))
        held = [frozenset(g) for g in got]
        assert sum(map(len, held)) <= total and max(map(len, held)) <= ramp


def test_the_witness_is_recomputed_and_proof_check_refuses_a_changed_number(tmp_path: Path) -> None:
    topo, coll = _switch_pairs(36, 5)
    b = summed_bound(topo, coll)
    assert check_witness("summed", {"bound": "summed", **b.witness}, topo, coll) == 6
    with pytest.raises(Exception, match="summed"):
        check_witness("summed", {"bound": "summed", **b.witness, "summed": [180, 450, 1170, 3150, 8730, 32400]},
                      topo, coll)
    cert = write_certificate(Claim(rounds=5), topo, coll, tmp_path / "certs")
    res = check_certificate(cert)
    assert res.verdict == "ok" and "summed" in " ".join(res.messages)
    doc = json.loads(cert.read_text())
    doc["witness"]["shared"] = 89
    cert.write_text(json.dumps(doc))
    bad = check_certificate(cert)
    assert bad.verdict == "error" and "shared" in " ".join(bad.messages)


def test_it_applies_to_one_address_sums_only_and_proves_little_where_ranks_send_over_every_link() -> None:
    topo, _ = _switch_pairs(8, 2)
    assert summed_bound(topo, library.collective("allgather", topo.ranks)).value is None
    assert summed_bound(topo, library.collective("allreduce", topo.ranks, chunks=2)).value is None
    mi = library.topology("mi250", 10)  # 3 or 4 xGMI links and a NIC of its own: O = 5, 3 rounds (reach: 4)
    b = summed_bound(mi, library.collective("allreduce", mi.ranks))
    assert b.value == 3 and b.witness["out"] == 5 and b.witness["shared"] == 0
