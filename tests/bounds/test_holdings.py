"""The holdings bound: what a rank can hold after each round, bounded by what its in-neighbours held."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.random_schedules import accepted_schedules
from hypothesis import HealthCheck, given, settings

from smtcoll import library
from smtcoll.bounds import check_witness, holdings_bound, lower_bounds, search_bounds
from smtcoll.proofs import check_certificate

ROOT = Path(__file__).resolve().parents[2]


def instance(topology: str, collective: str, nodes: int = 1, chunks: int = 1):
    topo = library.topology(topology, nodes)
    return topo, library.collective(collective, topo.ranks, None, chunks)


def test_mi250_x4_allgather_needs_9_rounds_where_capacity_says_8():
    topo, coll = instance("mi250", "allgather", 4)
    b = holdings_bound(topo, coll)
    # round 1: each of a GCD's 4 in-neighbours (its pair at width 4, the others, the NIC) holds 1 chunk;
    # from then on at most 8 per round arrive (4 + 2 + 1 + 1)
    assert b.value == 9
    assert b.witness["holdings"] == [1, 5, 13, 21, 29, 37, 45, 53, 61, 64] and b.witness["must_hold"] == 64
    full = lower_bounds(topo, coll, lp=False)
    assert full.receive.value == 8 and full.rounds.value == 9 and full.rounds.witness["from"] == "holdings"
    s = search_bounds(topo, coll)  # synth's gap and the engine's target
    assert s.least_steps(True, 1) == 9 and s.steps_why(True, 1).startswith("holdings:")
    assert s.least_steps(True, 2) < 9 * 2  # computed for C = 1: not applied to a finer split


def test_it_never_exceeds_a_schedule_the_engine_found_at_the_bound():
    for name, nodes, coll_name, rounds in (("a100", 2, "allgather", 8), ("dgx1", 1, "allgather", 2),
                                           ("hypercube:6", 1, "allreduce", 6)):
        topo, coll = instance(name, coll_name, nodes)
        assert holdings_bound(topo, coll).value <= rounds


def test_combining_counts_contributions_per_value():
    # a100 x 2 Allreduce, one address: a rank receives one value through its NVSwitch port and one through
    # its NIC per round, so contributions at most triple: 1, 3, 9, 27 -> 3 rounds for 16
    topo, coll = instance("a100", "allreduce", 2)
    b = holdings_bound(topo, coll)
    assert b.value == 3 and b.witness["holdings"] == [1, 3, 9, 16] and b.witness["address"] == 0
    # Ring(8) Allreduce: at most two neighbours' values a round: 1, 3, 8 -> 2 (the certified optimum is 5)
    topo, coll = instance("ring:8", "allreduce")
    assert holdings_bound(topo, coll).value == 2


@pytest.mark.parametrize("name,nodes,coll_name,chunks", [
    ("mi250", 4, "allgather", 1), ("dgx2", 2, "allgather", 1), ("a100", 2, "allreduce", 1),
    ("ndv2", 2, "allgather", 2), ("torus2d:4x4", 1, "allreduce", 2), ("star:6", 1, "alltoall", 1)])
def test_the_plain_integer_recheck_agrees_with_the_vectorized_bound(name, nodes, coll_name, chunks):
    topo, coll = instance(name, coll_name, nodes, chunks)
    fast, exact = holdings_bound(topo, coll), holdings_bound(topo, coll, exact=True)
    assert fast == exact
    assert check_witness("holdings", {"bound": "holdings", **fast.witness}, topo, coll) == fast.value


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(accepted_schedules(max_ranks=4, max_steps=3))
def test_no_accepted_schedule_holds_more_than_the_recursion_allows(schedule):
    # steps of several rounds included: the bound is on the total rounds
    b = holdings_bound(schedule.topology, schedule.collective)
    assert b.value is not None and schedule.rounds >= b.value


def test_bounds_certificate_proves_the_rounds_and_a_changed_ramp_is_caught(tmp_path):
    out = tmp_path / "certs"
    r = subprocess.run([sys.executable, "-m", "smtcoll", "bounds", "-t", "mi250", "--nodes", "4", "-c", "allgather",
                        "--no-lp", "--certificate", str(out), "--format", "json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["rounds"]["value"] == 9 and data["holdings"]["value"] == 9
    cert = Path(data["rounds"]["certificate_file"])
    res = check_certificate(cert)
    assert res.verdict == "ok" and "holdings bound" in " ".join(res.messages)
    doc = json.loads(cert.read_text())
    assert doc["claim"]["rounds"] == 8 and doc["witness"]["bound"] == "holdings"
    doc["witness"]["holdings"][3] += 1
    cert.write_text(json.dumps(doc))
    bad = check_certificate(cert)
    assert bad.verdict == "error" and "holdings" in " ".join(bad.messages)
