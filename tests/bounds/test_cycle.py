"""The odd-cycle bound (bounds/cycle.py): one-address Allreduce on a cycle of odd length n >= 5 needs one
step more than the distance bound."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from smtcoll import library
from smtcoll.bounds import check_witness, cycle_bound, lower_bounds, search_bounds
from smtcoll.model import Link, Topology
from smtcoll.proofs import check_certificate

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("n", [5, 7, 9, 11, 33, 1001])
def test_odd_rings_need_one_step_more_than_the_distance(n):
    topo = library.topology(f"ring:{n}")
    b = cycle_bound(topo, library.collective("allreduce", n))
    assert b.value == (n - 1) // 2 + 1
    assert (b.witness["cycle"], b.witness["distance"]) == (n, (n - 1) // 2)


def test_it_is_tight_where_the_exact_search_answers():
    # ring:5 and ring:7: the exact search's optima are 3 and 5 steps (4 steps unsat on ring:7); the bound
    # says 3 and 4, the distance bound 2 and 3
    for n, optimum in ((5, 3), (7, 5)):
        topo = library.topology(f"ring:{n}")
        assert cycle_bound(topo, library.collective("allreduce", n)).value <= optimum
    r = subprocess.run([sys.executable, "-m", "smtcoll", "synth", "-t", "ring:5", "-c", "allreduce", "--format",
                        "json"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["steps"] == 3


def test_a_cycle_in_any_order_of_ranks_counts_and_other_graphs_do_not():
    order = [0, 3, 1, 4, 2, 6, 5]
    pairs = [(order[i], order[(i + 1) % 7]) for i in range(7)]
    topo = Topology("shuffled", 7, [Link(a, b, 1) for a, b in pairs] + [Link(b, a, 1) for a, b in pairs])
    assert cycle_bound(topo, library.collective("allreduce", 7)).value == 4
    one_way = Topology("one-way", 7, [Link(a, b, 1) for a, b in pairs])
    assert cycle_bound(one_way, library.collective("allreduce", 7)).value is None
    cycles = [(0, 1, 2), (3, 4, 5, 6)]  # two cycles, 7 ranks: every rank has two neighbours both ways
    two = [(c[k], c[(k + 1) % len(c)]) for c in cycles for k in range(len(c))]
    topo2 = Topology("two-cycles", 7, [Link(a, b, 1) for a, b in two] + [Link(b, a, 1) for a, b in two])
    assert cycle_bound(topo2, library.collective("allreduce", 7)).value is None
    for name in ("ring:8", "ring:3", "torus2d:5x7", "dgx1"):
        topo = library.topology(name)
        assert cycle_bound(topo, library.collective("allreduce", topo.ranks)).value is None


def test_it_does_not_apply_to_copies_or_several_addresses():
    topo = library.topology("ring:7")
    assert cycle_bound(topo, library.collective("allgather", 7)).value is None
    assert cycle_bound(topo, library.collective("allreduce", 7, chunks=2)).value is None


def test_synth_and_bounds_report_it():
    topo = library.topology("ring:11")
    coll = library.collective("allreduce", 11)
    assert search_bounds(topo, coll).least_steps(True, 1) == 6  # the distance bound says 5
    rounds = lower_bounds(topo, coll, lp=False).rounds
    assert rounds.value == 6 and rounds.witness["from"] == "cycle" and rounds.witness["cycle"]["cycle"] == 11


def test_the_witness_is_recomputed_and_a_changed_number_is_caught():
    topo = library.topology("ring:9")
    coll = library.collective("allreduce", 9)
    b = cycle_bound(topo, coll)
    assert check_witness("cycle", {"bound": "cycle", **b.witness}, topo, coll) == 5
    with pytest.raises(Exception, match="distance"):
        check_witness("cycle", {"bound": "cycle", **b.witness, "distance": 5}, topo, coll)
    even = library.topology("ring:8")
    assert check_witness("cycle", {"bound": "cycle", "cycle": 8, "distance": 4}, even,
                         library.collective("allreduce", 8)) is None


def test_bounds_writes_a_certificate_proof_check_accepts_and_catches_a_changed_one(tmp_path):
    out = tmp_path / "certs"
    r = subprocess.run([sys.executable, "-m", "smtcoll", "bounds", "-t", "ring:7", "-c", "allreduce", "--no-lp",
                        "--certificate", str(out), "--format", "json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["rounds"]["value"] == 4
    cert = Path(data["rounds"]["certificate_file"])
    res = check_certificate(cert)
    assert res.verdict == "ok" and "cycle bound" in " ".join(res.messages)
    doc = json.loads(cert.read_text())
    assert doc["claim"]["rounds"] == 3 and doc["witness"]["bound"] == "cycle"
    doc["witness"]["cycle"] = 9
    cert.write_text(json.dumps(doc))
    bad = check_certificate(cert)
    assert bad.verdict == "error" and "cycle" in " ".join(bad.messages)
    doc["witness"]["cycle"] = 7
    doc["claim"]["rounds"] = 4  # 4 rounds is not ruled out by a bound of 4
    doc["claim"]["text"] = doc["claim"]["text"].replace("at most 3", "at most 4")
    cert.write_text(json.dumps(doc))
    assert check_certificate(cert).verdict != "ok"
