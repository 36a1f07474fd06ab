"""The schedule checker catches what SCCL's checker misses."""

import copy
import json

import pytest
from helpers.paths import CORPUS, corpus_params, needs_corpus

from smtcoll import library
from smtcoll.check.schedule import check_schedule, check_schedule_file
from smtcoll.model import Schedule, Send, Step

SCCL = CORPUS / "sccl-json"


def codes(report):
    return {v.code for v in report.violations}


def ring_allgather(n=4, rounds=1):
    steps = [Step(rounds, [Send((r - s) % n, r, (r + 1) % n) for r in range(n)]) for s in range(n - 1)]
    return Schedule(library.topology(f"ring:{n}"), library.collective("allgather", n), steps)


def test_correct_ring_allgather():
    report = check_schedule(ring_allgather())
    assert report.verdict == "ok" and report.metrics["steps"] == 3 and report.metrics["rounds"] == 3


def test_deleted_send_breaks_postcondition():
    s = ring_allgather()
    broken = Schedule(s.topology, s.collective, [s.steps[0], s.steps[1], Step(1, s.steps[2].sends[1:])])
    report = check_schedule(broken)
    assert report.verdict == "error" and codes(report) == {"postcondition"}
    assert "rank 1 never receives chunk 2" in report.violations[0].message


def test_send_before_held_is_acausal():
    s = ring_allgather()
    swapped = Schedule(s.topology, s.collective, [s.steps[1], s.steps[0], s.steps[2]])
    report = check_schedule(swapped)
    assert "not-held" in codes(report)
    assert report.violations[0].where == {"step": 0, "send": 0}


def test_send_over_missing_link():
    topo, coll = library.topology("line:3"), library.collective("broadcast", 3, root=0)
    s = Schedule(topo, coll, [Step(1, [Send(0, 0, 1), Send(0, 0, 2)])])
    report = check_schedule(s)
    assert codes(report) == {"missing-link"} and "no link 0 -> 2" in report.violations[0].message


def test_bandwidth_and_rounds():
    topo, coll = library.topology("line:2"), library.collective("scatter", 2, root=0, chunks=2)
    sends = [Send(2, 0, 1), Send(3, 0, 1)]
    assert codes(check_schedule(Schedule(topo, coll, [Step(1, sends)]))) == {"bandwidth"}
    assert check_schedule(Schedule(topo, coll, [Step(2, sends)])).verdict == "ok"


def test_switch_group_bandwidth():
    topo, coll = library.topology("hub-and-spoke:3"), library.collective("broadcast", 3, root=0)
    one_step = Schedule(topo, coll, [Step(1, [Send(0, 0, 1), Send(0, 0, 2)])])
    report = check_schedule(one_step)
    assert codes(report) == {"switch-bandwidth"} and "out0" in report.violations[0].message
    assert check_schedule(Schedule(topo, coll, [Step(2, one_step.steps[0].sends)])).verdict == "ok"


def test_double_counting_is_caught():
    # Line(3) allreduce: 0 -> 1 adds {0}; 1 -> 2 adds {0,1}; 2 -> 1 then sends {0,1,2} back: fine (copy).
    topo, coll = library.topology("line:3"), library.collective("allreduce", 3)
    good = [Step(1, [Send(0, 0, 1)]), Step(1, [Send(0, 1, 2)]), Step(1, [Send(0, 2, 1)]), Step(1, [Send(0, 1, 0)])]
    assert check_schedule(Schedule(topo, coll, good)).verdict == "ok"
    # Rank 0 sends its contribution to rank 1 twice: rank 1 would add it twice.
    twice = [Step(1, [Send(0, 0, 1)]), Step(1, [Send(0, 0, 1)]), *good[1:]]
    report = check_schedule(Schedule(topo, coll, twice))
    assert "double-count" in codes(report) and report.violations[0].where == {"step": 1, "send": 0}


def test_missing_contribution():
    topo, coll = library.topology("line:3"), library.collective("allreduce", 3)
    steps = [Step(1, [Send(0, 1, 2)]), Step(1, [Send(0, 2, 1), Send(0, 1, 0)]), Step(1, [Send(0, 0, 1)])]
    report = check_schedule(Schedule(topo, coll, steps))
    assert "postcondition" in codes(report)
    assert any("missing contribution(s) 0" in v.message for v in report.violations)


@needs_corpus()
@pytest.mark.parametrize("path", corpus_params(sorted(SCCL.glob("*.json")), SCCL), ids=lambda p: p.name)
def test_sccl_corpus_verdicts(path):
    report = check_schedule_file(str(path))
    if "composed" in path.name:
        assert report.verdict == "error" and codes(report) >= {"unknown-address"}
        assert any("address 1 does not exist" in v.message for v in report.violations)
    else:
        assert report.verdict == "ok", report.violations


@needs_corpus()
def test_sccl_file_with_sends_deleted(tmp_path):
    data = json.loads((SCCL / "Allgather.n8-DGX1-steps2.msccl.json").read_text())
    broken = copy.deepcopy(data)
    del broken["steps"][1]["sends"][5:9]
    path = tmp_path / "deleted.msccl.json"
    path.write_text(json.dumps(broken))
    assert check_schedule_file(str(path)).verdict == "error"


@needs_corpus()
def test_sccl_file_with_acausal_and_phantom_sends(tmp_path):
    data = json.loads((SCCL / "Allgather.n8-DGX1-steps2.msccl.json").read_text())
    data["steps"][0]["sends"].append([7, 0, 1])  # rank 0 does not hold chunk 7 at step 0
    data["steps"][0]["sends"].append([0, 0, 5])  # no NVLink between 0 and 5
    path = tmp_path / "x.msccl.json"
    path.write_text(json.dumps(data))
    assert codes(check_schedule_file(str(path))) >= {"not-held", "missing-link"}


def test_unusable_file_gives_unusable_report(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{")
    report = check_schedule_file(str(path))
    assert report.verdict == "unusable" and "not valid JSON" in report.violations[0].message


@needs_corpus()
def test_schedule_checked_on_another_topology(cli):
    """`verify --topology`: is this algorithm valid on my machine?"""
    path = str(SCCL / "Allgather.n8-DGX1-steps2.msccl.json")
    from smtcoll import library

    assert check_schedule_file(path, library.topology("ndv2")).verdict == "ok"
    on_ring = check_schedule_file(path, library.topology("ring:8"))
    assert codes(on_ring) == {"missing-link", "bandwidth"}
    assert "no link 0 -> 2 in topology 'ring:8'" in on_ring.violations[0].message
    assert codes(check_schedule_file(path, library.topology("ring:4"))) == {"topology-mismatch"}
    result = cli("verify", path, "--topology", "ring:8")
    assert result.returncode == 1 and "missing-link" in result.stdout
