"""`smtcoll verify` as a user runs it: files, directories, globs, text and JSON output, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import paths
from helpers.xmlgen import allgather2, write

from smtcoll import library
from smtcoll.cli import app
from smtcoll.cli.app import run_guarded
from smtcoll.formats import save_schedule
from smtcoll.model import Schedule, Send, Step

CORPUS = paths.CORPUS / "msccl-xml"


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        run_guarded(app, list(args))
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def test_verified_file_exits_0(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, allgather2())
    code, out, _err = run(capsys, "verify", str(path))
    assert code == 0 and f"{path}: ok" in out and "1 verified" in out


def test_wrong_file_exits_1_and_names_the_place(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, allgather2(recv_first=True))
    code, out, _ = run(capsys, "verify", str(path))
    assert code == 1
    assert f"{path}:7: deadlock: gpu 0, tb 1, step 0:" in out


def test_unusable_file_exits_2_without_traceback(tmp_path: Path, capsys) -> None:
    bad = write(tmp_path, "<!DOCTYPE a [<!ENTITY x 'y'>]><algo>&x;</algo>", "bomb.xml")
    code, out, err = run(capsys, "verify", str(bad), str(write(tmp_path, allgather2(recv_first=True), "wrong.xml")))
    assert code == 2  # unusable wins over wrong
    assert "Traceback" not in out + err and "unusable" in out and "DTD" in out


@pytest.mark.parametrize("content", ["", "not xml at all", "<foo/>", '<algo ngpus="x"/>'])
def test_hostile_files_give_a_clear_message(tmp_path: Path, capsys, content: str) -> None:
    code, out, err = run(capsys, "verify", str(write(tmp_path, content)))
    assert code in (1, 2) and "Traceback" not in out + err
    assert "prog.xml" in out


def test_json_output_follows_the_contract(tmp_path: Path, capsys) -> None:
    a = write(tmp_path, allgather2(), "a.xml")
    b = write(tmp_path, allgather2(first_dep=False), "b.xml")
    code, out, _ = run(capsys, "verify", "--format", "json", str(b), str(a))
    assert code == 1
    data = json.loads(out)
    assert [d["file"] for d in data] == [str(a), str(b)]  # sorted
    assert set(data[0]) == {"schema", "file", "verdict", "format", "collective", "ranks", "runtimes", "violations",
                            "metrics", "time"}
    assert data[0]["schema"] == "smtcoll-verify/1"
    assert data[0]["verdict"] == "ok" and data[1]["verdict"] == "error"
    assert data[0]["runtimes"] == {"executor": True, "legacy": True}
    v = next(v for v in data[1]["violations"] if v["severity"] == "error")
    assert set(v) == {"code", "severity", "message", "where"} and "gpu" in v["where"]
    # deterministic
    assert run(capsys, "verify", "--format", "json", str(b), str(a))[1] == out


def test_directories_and_globs(tmp_path: Path, capsys) -> None:
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", allgather2(), "x.xml")
    write(tmp_path, allgather2(), "y.xml")
    (tmp_path / "notes.txt").write_text("ignored")
    code, out, _ = run(capsys, "verify", "--format", "json", str(tmp_path))
    assert code == 0 and len(json.loads(out)) == 2
    code, out, _ = run(capsys, "verify", "--format", "json", str(tmp_path / "*.xml"))
    assert [Path(d["file"]).name for d in json.loads(out)] == ["y.xml"]


def test_no_files_is_a_usage_error(tmp_path: Path, capsys) -> None:
    code, _, err = run(capsys, "verify", str(tmp_path))
    assert code == 2 and "no algorithm files" in err


def test_runtime_option(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, allgather2().replace('coll="allgather"', 'coll="reducescatter"').replace(
        'o_chunks="2"', 'o_chunks="1"'))
    assert run(capsys, "verify", "--runtime", "legacy", str(path))[0] == 1
    assert run(capsys, "verify", "--runtime", "nonsense", str(path))[0] == 2


def test_collective_option(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, allgather2())
    assert run(capsys, "verify", "--collective", "allgather", str(path))[0] == 0
    assert run(capsys, "verify", "--collective", "alltoall", str(path))[0] == 1
    assert run(capsys, "verify", "--collective", "nonsense", str(path))[0] == 2


def test_schedules_are_dispatched_to_the_schedule_checker(tmp_path: Path, capsys) -> None:
    topo = library.topology("ring:2")
    coll = library.collective("allgather", 2)
    good = Schedule(topo, coll, [Step(1, [Send(0, 0, 1), Send(1, 1, 0)])])
    save_schedule(good, tmp_path / "good.json")
    save_schedule(Schedule(topo, coll, [Step(1, [Send(0, 0, 1)])]), tmp_path / "deleted_send.json")
    code, out, _ = run(capsys, "verify", "--format", "json", str(tmp_path / "good.json"),
                       str(tmp_path / "deleted_send.json"))
    data = {Path(d["file"]).name: d for d in json.loads(out)}
    assert code == 1
    assert data["good.json"]["verdict"] == "ok"
    assert data["deleted_send.json"]["verdict"] == "error"
    (tmp_path / "broken.json").write_text("{")
    assert run(capsys, "verify", str(tmp_path / "broken.json"))[0] == 2


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus not present next to the repository")
def test_whole_corpus_in_parallel_matches_sequential(capsys) -> None:
    from smtcoll.check.files import check_files, expand

    files = expand([str(CORPUS)])
    assert len(files) == 84
    par = check_files(files[:12], jobs=2)
    seq = check_files(files[:12], jobs=1)
    assert [r.to_json() for r in par] == [r.to_json() for r in seq]


def test_size_limit_option(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, allgather2())
    code, out, _ = run(capsys, "verify", "--max-bytes", "100", str(path))
    assert code == 2 and "limit" in out
    assert run(capsys, "verify", str(path))[0] == 0


def test_huge_and_deep_inputs_are_bounded(tmp_path: Path, capsys) -> None:
    huge = write(tmp_path, allgather2().replace('ngpus="2"', 'ngpus="1000000000"'), "huge.xml")
    deep = write(tmp_path, "<algo>" + "<x>" * 50000 + "</x>" * 50000 + "</algo>", "deep.xml")
    code, out, err = run(capsys, "verify", str(huge))
    assert code == 2 and "ngpus=1000000000: over the --max-ranks limit of 4096" in out
    code, out, err = run(capsys, "verify", "--max-ranks", "2000000000", "--max-chunks", "4000000000", str(huge))
    assert code == 1 and "too large" in out
    code, out, err = run(capsys, "verify", str(deep))
    # the runtimes' reader skips the unknown nesting by counting depth and then refuses an <algo> without
    # attributes: an error verdict, read without recursion
    assert code == 1 and "lacks" in out and "Traceback" not in err
