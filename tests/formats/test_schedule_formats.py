"""Schedule files: smtcoll's JSON (lossless), SCCL *.msccl.json and TACCL *.sccl.json readers."""

import json

import pytest
from helpers.paths import CORPUS, corpus_params, needs_corpus

from smtcoll import library
from smtcoll.errors import InputError
from smtcoll.formats import dumps_schedule, load_schedule, parse_schedule
from smtcoll.model import Schedule, Send, Step

SCCL = CORPUS / "sccl-json"


def ring_allgather(n: int = 4) -> Schedule:
    """The classic ring: in step s, rank r forwards chunk (r - s) mod n to r + 1."""
    steps = [Step(1, [Send((r - s) % n, r, (r + 1) % n) for r in range(n)]) for s in range(n - 1)]
    return Schedule(library.topology(f"ring:{n}"), library.collective("allgather", n), steps, "ring")


def test_own_format_round_trips_byte_for_byte(tmp_path):
    s = ring_allgather()
    text = dumps_schedule(s)
    assert json.loads(text)["format"] == "smtcoll.schedule" and json.loads(text)["version"] == 1
    back = parse_schedule(text)
    assert back == s and dumps_schedule(back) == text


def test_own_format_keeps_switches_timing_and_multinode(tmp_path):
    topo = library.topology("ndv2", nodes=2)
    s = Schedule(topo, library.collective("reducescatter", 16, chunks=2), [Step(2, [Send(3, 0, 9)])])
    assert parse_schedule(dumps_schedule(s)) == s


@needs_corpus()
@pytest.mark.parametrize("path", corpus_params(sorted(SCCL.glob("*.json")), SCCL), ids=lambda p: p.name)
def test_reads_every_sccl_file(path):
    s = load_schedule(path)
    data = json.loads(path.read_text())
    assert len(s.steps) == data["instance"]["steps"]
    assert s.rounds == data["instance"]["steps"] + data["instance"]["extra_rounds"]
    assert s.collective.chunk_factor == data["instance"]["chunks"]
    assert s.collective.chunks == len(data["collective"]["chunks"]) * data["instance"]["chunks"]
    assert sum(len(x.sends) for x in s.steps) == sum(len(x["sends"]) for x in data["steps"])
    assert parse_schedule(dumps_schedule(s)) == s


@needs_corpus()
def test_sccl_semantics_of_chunks_and_links():
    s = load_schedule(SCCL / "Allgather.n4-Ring.n4-steps2.rounds3.chunks2.msccl.json")
    assert s.collective.pre_sets[1] == {2, 3}  # base chunk 1 split in two: addresses 2 and 3
    assert s.topology.has_link(0, 1) and not s.topology.has_link(0, 2)
    rs = load_schedule(SCCL / "ReduceScatter.n8-DGX1-steps2.msccl.json")
    assert rs.collective.is_combining and len(rs.collective.addresses) == 8


TACCL_RING = {
    "name": "taccl-allgather-ring4",
    "collective": {"name": "Allgather", "nodes": 4},
    "topology": {"name": "ring4", "links": [[0, 1, 0, 1], [1, 0, 1, 0], [0, 1, 0, 1], [1, 0, 1, 0]]},
    "input_map": {"0": [0], "1": [1], "2": [2], "3": [3]},
    "output_map": {str(r): [0, 1, 2, 3] for r in range(4)},
    "steps": [
        {"rounds": 1, "sends": [[r, r, (r + 1) % 4, 0.0, 0] for r in range(4)]},
        {"rounds": 1, "sends": [[(r - 1) % 4, r, (r + 1) % 4, 1.2, 0] for r in range(4)]},
        {"rounds": 1, "sends": [[(r - 2) % 4, r, (r + 1) % 4, 2.4, 0] for r in range(4)]},
    ],
}


def test_reads_taccl_files_with_maps(tmp_path):
    path = tmp_path / "allgather.sccl.json"
    path.write_text(json.dumps(TACCL_RING))
    s = load_schedule(path)
    assert s.collective.name == "allgather" and s.collective.chunks == 4 and len(s.steps) == 3
    assert s.steps[1].sends[0] == Send(3, 0, 1)
    from smtcoll.check.schedule import check_schedule

    assert check_schedule(s).verdict == "ok"


def test_reads_taccl_files_with_chunk_lists(tmp_path):
    data = dict(TACCL_RING, sccl_type="algorithm",
                collective={"sccl_type": "collective", "name": "Allgather(n=4)", "runtime_name": "allgather",
                            "chunks": [{"pre": [r], "post": [0, 1, 2, 3], "addr": r} for r in range(4)]},
                instance={"steps": 3, "extra_rounds": 0, "chunks": 1})
    path = tmp_path / "b.sccl.json"
    path.write_text(json.dumps(data))
    assert load_schedule(path).collective == library.collective("allgather", 4)


@pytest.mark.parametrize("text, message", [
    ("", "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"format": "smtcoll.schedule", "version": 9}', "version"),
    ('{"hello": 1}', "not a schedule"),
    ('{"format": "smtcoll.schedule", "version": 1, "topology": {"ranks": 2, "links": []}, '
     '"collective": {"name": "x", "ranks": 3, "chunks": 1, "pre": [[0, 0]], "post": [], "address": [0]}, '
     '"steps": []}', "has 3 ranks but the topology has 2"),
    (json.dumps(dict(TACCL_RING, steps=[{"rounds": 1, "sends": [[0, 0]]}])), r"steps\[0\]\.sends\[0\]"),
    (json.dumps(dict(TACCL_RING, steps=[{"rounds": "1", "sends": []}])), r"steps\[0\]\.rounds"),
    (json.dumps(dict(TACCL_RING, topology={"links": [[0, 1], [1]]})), r"topology\.links\[1\]"),
    ("[" * 100000 + "]" * 100000, "nested too deeply|not valid JSON|expected"),
])
def test_bad_schedule_files(tmp_path, cli, text, message):
    path = tmp_path / "s.json"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        load_schedule(path)


def test_sends_are_one_line_per_step():
    text = dumps_schedule(ring_allgather())
    assert '"sends": [[0, 0, 1], [1, 1, 2], [2, 2, 3], [3, 3, 0]]' in text
    assert len(text.splitlines()) < 120  # indent=1 wrote a line per number


def test_verify_max_bytes_lifts_the_schedule_size_cap(tmp_path, monkeypatch):
    from smtcoll.check.files import check_file
    from smtcoll.formats import schedules
    from smtcoll.msccl.reader import Limits

    path = tmp_path / "s.json"
    path.write_text(dumps_schedule(ring_allgather()))
    size = path.stat().st_size
    monkeypatch.setattr(schedules, "MAX_SCHEDULE_BYTES", size - 1)  # as a file over 64 MiB is by default
    over = check_file(str(path), "any", None, None, None, Limits(max_bytes=size - 1))
    assert over.unusable and "--max-bytes" in over.violations[0].message
    # the option its message names lifts it: the schedule readers' own cap no longer applies
    assert check_file(str(path), "any", None, None, None, Limits(max_bytes=size)).verdict == "ok"
