"""`smtcoll verify` behaves like the linters its users know: `path:line: code: message`, colours only on a
terminal, --select/--ignore by code prefix, --quiet, --output-file written atomically, SARIF 2.1.0 valid
against the published schema, a directory walk that recognises algorithm files by content, --chunks."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import paths
from helpers.xmlgen import allgather2, write

from smtcoll.check.discover import expand, is_algorithm_file
from smtcoll.cli import app
from smtcoll.cli.app import run_guarded

REPO = Path(__file__).resolve().parents[2]
SCHEMA = Path(__file__).resolve().parents[1] / "data" / "sarif-schema-2.1.0.json"


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        run_guarded(app, list(args))
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def wrong(tmp_path: Path, name: str = "wrong.xml") -> Path:
    """An allgather whose rank 0 receives before it sends on both sides: a deadlock at line 7."""
    return write(tmp_path, allgather2(recv_first=True), name)


def test_findings_read_path_line_code_message(tmp_path: Path, capsys) -> None:
    path = wrong(tmp_path)
    code, out, _ = run(capsys, "verify", str(path))
    assert code == 1
    assert f"{path}:7: deadlock: gpu 0, tb 1, step 0: " in out
    assert out.splitlines()[0].startswith(f"{path}: error (allgather, 2 ranks")
    assert "\x1b[" not in out  # not a terminal: no colours


def _on_a_terminal(args: list[str], env: dict[str, str]) -> str:
    """Run smtcoll with its stdout on a pseudo-terminal, as a user's shell does."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "smtcoll", *args], stdout=slave, stderr=slave, cwd=REPO,
                            env={**{k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")},
                                 "PYTHONPATH": str(REPO), **env})
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the terminal closed
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(master)
    return b"".join(chunks).decode()


def test_colours_on_a_terminal_and_never_with_no_color(tmp_path: Path) -> None:
    path = str(wrong(tmp_path))
    coloured = _on_a_terminal(["verify", path], {"TERM": "xterm-256color"})
    assert "\x1b[" in coloured and "deadlock" in coloured
    plain = _on_a_terminal(["verify", path], {"TERM": "xterm-256color", "NO_COLOR": "1"})
    assert "\x1b[" not in plain and f"{path}:7: deadlock: " in plain


def test_select_and_ignore_take_code_prefixes_and_decide_the_verdict(tmp_path: Path, capsys) -> None:
    path = wrong(tmp_path)
    code, out, _ = run(capsys, "verify", "--ignore", "dead", str(path))
    assert code == 0 and f"{path}: ok" in out and "deadlock" not in out
    code, out, _ = run(capsys, "verify", "--select", "race,deadl", str(path))
    assert code == 1 and "deadlock" in out
    code, out, _ = run(capsys, "verify", "--select", "race", str(path))
    assert code == 0 and "deadlock" not in out
    # a file that cannot be read stays unusable whatever is ignored
    bad = write(tmp_path, "not xml", "bad.xml")
    code, out, _ = run(capsys, "verify", "--ignore", "unusable", str(bad))
    assert code == 2 and f"{bad}: unusable" in out


def test_quiet_prints_the_findings_only(tmp_path: Path, capsys) -> None:
    path = wrong(tmp_path)
    ok = write(tmp_path, allgather2(), "ok.xml")
    code, out, _ = run(capsys, "verify", "-q", str(path), str(ok))
    assert code == 1
    lines = out.splitlines()
    assert lines and all(line.startswith(f"{path}:7: ") for line in lines), out
    code, out, _ = run(capsys, "verify", "--quiet", str(ok))
    assert code == 0 and out == ""


def test_output_file_is_written_whole_and_stdout_keeps_the_summary(tmp_path: Path, capsys) -> None:
    path = wrong(tmp_path)
    report = tmp_path / "out" / "report.json"
    report.parent.mkdir()
    report.write_text("old content that must be replaced")
    code, out, _ = run(capsys, "verify", "--format", "json", "--output-file", str(report), str(path))
    assert code == 1 and out.strip() == "1 file(s): 0 verified, 1 wrong, 0 unusable"
    assert json.loads(report.read_text())[0]["verdict"] == "error"
    assert sorted(p.name for p in report.parent.iterdir()) == ["report.json"]  # no temporary file left
    code, _, err = run(capsys, "verify", "--output-file", str(tmp_path / "missing" / "r.txt"), str(path))
    assert code == 2 and "--output-file" in err and "Traceback" not in err


def test_sarif_validates_against_the_published_schema(tmp_path: Path, capsys) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text())
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    path = wrong(tmp_path)
    bad = write(tmp_path, "<algo", "bad.xml")
    ok = write(tmp_path, allgather2(), "ok.xml")
    code, out, _ = run(capsys, "verify", "--format", "sarif", "-v", str(path), str(bad), str(ok))
    assert code == 2
    log = json.loads(out)
    validator = jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, errors[0].message
    (run_,) = log["runs"]
    results = run_["results"]
    deadlock = next(r for r in results if r["ruleId"] == "deadlock")
    assert deadlock["level"] == "error"
    assert deadlock["locations"][0]["physicalLocation"]["region"]["startLine"] == 7
    assert run_["tool"]["driver"]["rules"][deadlock["ruleIndex"]]["id"] == "deadlock"
    assert any(r["ruleId"] == "unusable" for r in results)
    # deterministic: the same input gives the same bytes
    assert run(capsys, "verify", "--format", "sarif", "-v", str(path), str(bad), str(ok))[1] == out


def test_a_directory_walk_recognises_algorithm_files_by_content(tmp_path: Path, capsys) -> None:
    algo = write(tmp_path, allgather2(), "algo.xml")
    commented = write(tmp_path, "<!-- by msccl-tools -->\n" + allgather2(), "c.xml")
    schedule = tmp_path / "ring.json"
    assert run(capsys, "synth", "-t", "ring:3", "-c", "allgather", "-o", str(schedule))[0] == 0
    (tmp_path / "package.json").write_text('{"name": "site", "version": "1.0.0", "steps": 3}')
    (tmp_path / "pom.xml").write_text('<?xml version="1.0"?><project/>')
    (tmp_path / "proofs").mkdir()
    certificate = next((REPO / "proofs").glob("*.json"))
    (tmp_path / "proofs" / certificate.name).write_text(certificate.read_text())
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "hidden.xml").write_text(allgather2())
    assert expand([str(tmp_path)]) == sorted(map(str, [algo, commented, schedule]))
    assert not is_algorithm_file(str(tmp_path / "package.json"))
    code, out, _ = run(capsys, "verify", str(tmp_path))
    assert code == 0 and "3 file(s): 3 verified" in out
    # --exclude by name or path glob
    assert expand([str(tmp_path)], ["*.json"]) == sorted(map(str, [algo, commented]))
    assert expand([str(tmp_path)], [f"{tmp_path}/c.*"]) == sorted(map(str, [algo, schedule]))
    # a file named is checked whatever it is, unless --only-algorithms (the pre-commit hook) applies the rule
    code, out, _ = run(capsys, "verify", str(tmp_path / "package.json"))
    assert code == 2
    code, out, _ = run(capsys, "verify", "--only-algorithms", str(tmp_path / "package.json"), str(algo))
    assert code == 0 and "1 file(s): 1 verified" in out and "package.json" not in out
    code, out, _ = run(capsys, "verify", "--only-algorithms", str(tmp_path / "pom.xml"))
    assert code == 0 and "no algorithm files" in out


SHIFT = """[collective]
name = "shift"
description = "every rank's chunk goes to the next rank"
rooted = false
chunks = "ranks"
pre = "rank == chunk"
post = "rank == (chunk + 1) % ranks"
address = "chunk"
"""


def test_chunks_of_a_custom_collective(tmp_path: Path, capsys) -> None:
    spec = tmp_path / "shift.toml"
    spec.write_text(SHIFT)
    xml = tmp_path / "s2.xml"
    code, _, err = run(capsys, "synth", "-t", "ring:4", "-c", str(spec), "--chunks", "2", "--strategy", "instance",
                       "--steps", "2", "-o", str(tmp_path / "s2.json"), "--xml", str(xml))
    assert code == 0, err
    # the buffers show 2 chunks per rank: the spec is split to fit, and --chunks 2 says so explicitly
    for extra in ([], ["--chunks", "2"]):
        code, out, _ = run(capsys, "verify", "--collective", str(spec), *extra, str(xml))
        assert code == 0 and "postcondition" not in out, out
    code, out, _ = run(capsys, "verify", "--collective", str(spec), "--chunks", "3", str(xml))
    assert code == 1
    assert "the file has 2 chunks per rank (i_chunks=2) and --chunks 3: give --chunks 2" in out
    code, _, err = run(capsys, "verify", "--chunks", "2", str(xml))
    assert code == 2 and "--collective" in err


def test_max_bytes_zero_is_a_note_for_executor_users(capsys) -> None:
    corpus = paths.CORPUS / "msccl-xml" / "mscclang" / "allgather_ring_4g_1ch_1i_LL.xml"
    if not corpus.is_file():
        pytest.skip("shared corpus not present next to the repository")
    _, out, _ = run(capsys, "verify", "--format", "json", "--runtime", "executor", str(corpus))
    (report,) = json.loads(out)
    assert [v["severity"] for v in report["violations"] if v["code"] == "max-bytes"] == ["info"]
    _, out, _ = run(capsys, "verify", "--format", "json", "--runtime", "legacy", str(corpus))
    (report,) = json.loads(out)
    assert [v["severity"] for v in report["violations"] if v["code"] == "max-bytes"] == ["warning"]
