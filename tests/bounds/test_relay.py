"""The relay bound (bounds/relay.py): a node learns of the others only through its entry ranks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from smtcoll import library
from smtcoll.bounds import check_witness, lower_bounds, relay_bound, search_bounds
from smtcoll.proofs import check_certificate

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("nodes", "known", "rounds"), [
    (3, [1, 1, 1, 2, 3], 6), (4, [1, 1, 1, 2, 3, 4], 7), (8, [1, 1, 1, 2, 3, 5, 8], 8)])
def test_ndv2_one_nic_per_node_gives_a_fibonacci_ramp_plus_the_last_hops(nodes, known, rounds):
    topo = library.topology("ndv2", nodes)
    for name in ("allreduce", "allgather"):
        b = relay_bound(topo, library.collective(name, topo.ranks))
        assert b.value == rounds
        assert b.witness["known"] == known
        # one value a round into GPU 1, one hop on to GPU 0, GPU 7 two hops from GPU 0, GPU 7 two from GPU 1
        assert (b.witness["capacity"], b.witness["relay"], b.witness["far"], b.witness["last"]) == (1, 1, 2, 2)


def test_synth_and_bounds_report_it_where_it_is_the_strongest():
    topo = library.topology("ndv2", 8)
    coll = library.collective("allreduce", topo.ranks)
    assert search_bounds(topo, coll).least_steps(True, 1) == 8  # the distance bound says 5, holdings 3
    rounds = lower_bounds(topo, coll, lp=False).rounds
    assert rounds.value == 8 and rounds.witness["from"] == "relay" and rounds.witness["relay"]["nodes"] == 8


def test_it_does_not_apply_to_one_node_to_scattered_chunks_or_several_addresses():
    one = library.topology("ndv2")
    assert relay_bound(one, library.collective("allreduce", 8)).value is None
    topo = library.topology("ndv2", 4)
    assert relay_bound(topo, library.collective("alltoall", 32)).value is None  # a chunk is not needed everywhere
    assert relay_bound(topo, library.collective("allreduce", 32, chunks=2)).value is None  # two addresses


def test_the_witness_is_recomputed_and_a_changed_ramp_is_caught():
    topo = library.topology("ndv2", 4)
    coll = library.collective("allreduce", topo.ranks)
    b = relay_bound(topo, coll)
    assert check_witness("relay", {"bound": "relay", **b.witness}, topo, coll) == 7
    with pytest.raises(Exception, match="known"):
        check_witness("relay", {"bound": "relay", **b.witness, "known": [1, 1, 2, 3, 4, 4]}, topo, coll)


def test_bounds_writes_a_certificate_proof_check_accepts_and_catches_a_changed_one(tmp_path):
    out = tmp_path / "certs"
    r = subprocess.run([sys.executable, "-m", "smtcoll", "bounds", "-t", "ndv2", "--nodes", "8", "-c", "allreduce",
                        "--no-lp", "--certificate", str(out), "--format", "json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["rounds"]["value"] == 8
    cert = Path(data["rounds"]["certificate_file"])
    res = check_certificate(cert)
    assert res.verdict == "ok" and "relay bound" in " ".join(res.messages)
    doc = json.loads(cert.read_text())
    assert doc["claim"]["rounds"] == 7 and doc["witness"]["bound"] == "relay"
    doc["witness"]["last"] = 3
    cert.write_text(json.dumps(doc))
    bad = check_certificate(cert)
    assert bad.verdict == "error" and "last" in " ".join(bad.messages)


def test_a_broadcast_across_nodes_gets_no_relay_bound_instead_of_a_crash():
    """Held-out check: `smtcoll bounds -t a100 --nodes 2 -c broadcast` exited 70 (max() of no chunk: the
    other node starts with none). The relay bound does not apply there; the others still answer."""
    topo = library.topology("a100", 2)
    coll = library.collective("broadcast", topo.ranks, 0)
    b = relay_bound(topo, coll)
    assert b.value is None and "starts with no chunk" in b.note
    assert lower_bounds(topo, coll).rounds.value >= 2
