"""`smtcoll verify` for CI: JUnit XML and GitHub annotations, lines on every diagnostic, and the limits."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers import paths
from helpers.xmlgen import algo, allgather2, gpu, step, tb, write

from smtcoll.check.files import check_files, expand
from smtcoll.check.report import Report, Violation
from smtcoll.cli import app
from smtcoll.cli.app import run_guarded
from smtcoll.cli.verify_output import format_github, format_junit

CORPUS = paths.CORPUS / "msccl-xml"
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus not present next to the repository")


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        run_guarded(app, list(args))
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def both_modes() -> str:
    """An allgather declared in place and out of place whose in-place run is wrong: in place, o[r] of rank r
    already is its input, and the copy i[0] -> o[r] becomes a self-copy; here the copy goes to the wrong slot."""
    def rank(r: int) -> str:
        peer = 1 - r
        return gpu(r, 1, 2, 0,
                   tb(0, -1, -1, 0, step(0, "cpy", "i", 0, "o", r, hasdep=1)),
                   tb(1, peer, peer, 0, step(0, "s", "i", 0, "o", r, depid=0, deps=0),
                      step(1, "r", "o", peer, "o", peer)))
    return algo(rank(0), rank(1), inplace=1, outofplace=1)


def _find(element: ET.Element, path: str) -> ET.Element:
    found = element.find(path)
    assert found is not None, f"no {path} under <{element.tag}>"
    return found


def test_junit_has_one_test_case_per_file_and_mode(tmp_path: Path, capsys) -> None:
    ok = write(tmp_path, allgather2(), "ok.xml")
    wrong = write(tmp_path, allgather2().replace('dstoff="1" cnt="1" depid="-1"', 'dstoff="0" cnt="1" depid="-1"', 1),
                  "wrong.xml")
    bad = write(tmp_path, "not xml", "bad.xml")
    modes = write(tmp_path, both_modes(), "modes.xml")
    code, out, _ = run(capsys, "verify", "--format", "junit", str(tmp_path))
    assert code == 2
    root = ET.fromstring(out.encode())
    assert root.tag == "testsuites"
    suite = _find(root, "testsuite")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == {f"{ok} [out-of-place]", f"{wrong} [out-of-place]", f"{bad} [read]",
                          f"{modes} [in-place]", f"{modes} [out-of-place]"}
    assert (suite.get("tests"), suite.get("errors")) == ("5", "1")
    assert list(cases[f"{ok} [out-of-place]"]) == []
    failure = cases[f"{wrong} [out-of-place]"].find("failure")
    assert failure is not None and failure.get("type") and f"{wrong}:" in (failure.text or "")
    assert cases[f"{wrong} [out-of-place]"].get("line")
    assert cases[f"{bad} [read]"].find("error") is not None
    assert int(suite.get("failures", "")) == sum(c.find("failure") is not None for c in cases.values())


def test_junit_escapes_everything() -> None:
    nasty = 'a<b & "c" ]]> \x01\x1b end'
    report = Report("dir/we<ird>&\".xml", violations=[Violation("race", nasty, "error", {"line": 3}),
                                                      Violation("max-bytes", nasty, "warning")],
                    metrics={"modes": ["out-of-place"]})
    out = format_junit([report])
    root = ET.fromstring(out.encode())  # well-formed, and only XML 1.0 characters
    case = _find(root, "testsuite/testcase")
    assert case.get("file") == report.file and case.get("line") == "3"
    assert "a<b & \"c\" ]]>" in (_find(case, "failure").text or "") and "\x01" not in out
    assert "max-bytes" in (_find(case, "system-out").text or "")


def test_github_annotations_escape_properties_and_data() -> None:
    report = Report("odd,name:x.xml", violations=[
        Violation("deadlock", "50% of\nthe blocks\r", "error", {"line": 7, "gpu": 1}),
        Violation("max-bytes", "w", "warning"), Violation("missing-gpu", "i", "info")])
    lines = format_github([report]).splitlines()
    assert lines[0] == ("::error file=odd%2Cname%3Ax.xml,line=7,title=smtcoll verify%3A deadlock::"
                        "deadlock: gpu 1, line 7: 50%25 of%0Athe blocks%0D")
    assert lines[1] == "::warning file=odd%2Cname%3Ax.xml,title=smtcoll verify%3A max-bytes::max-bytes: w"
    assert lines[2].startswith("1 file(s)") and len(lines) == 3
    assert "::notice " in format_github([report], verbose=True)


def test_github_format_from_the_command(tmp_path: Path, capsys) -> None:
    wrong = write(tmp_path, allgather2(first_dep=False))
    code, out, _ = run(capsys, "verify", "--format", "github", str(wrong))
    assert code == 1
    assert any(line.startswith(f"::error file={wrong},line=") for line in out.splitlines())


def test_diagnostics_about_elements_carry_their_line(tmp_path: Path) -> None:
    def rank(r: int) -> str:  # two thread blocks of rank 0 send to rank 1 on channel 0; tb 3 missing on rank 1
        return gpu(r, 1, 2, 0, tb(0, 1 - r, -1, 0, step(0, "s", "i", 0, "o", 0)),
                   tb(1, 1 - r, -1, 0, step(0, "s", "i", 0, "o", 0)), tb(2 if r == 0 else 4, -1, 1 - r, 0,
                                                                          step(0, "r", "o", 0, "o", 1 - r)))
    files = [write(tmp_path, algo(rank(0), rank(1)), "dup.xml")]
    files += [Path(f) for f in expand([str(CORPUS / "broken"), str(CORPUS / "mscclang")])] if CORPUS.is_dir() else []
    seen = set()
    for report in check_files([str(f) for f in files], jobs=1):
        for v in report.violations:
            seen.add(v.code)
            if "gpu" in v.where or "tb" in v.where or v.code in ("unusable", "parse-rule"):
                assert isinstance(v.where.get("line"), int), (report.file, v.to_json())
    assert {"duplicate-connection", "parse-rule"} <= seen


@pytest.mark.parametrize("option, value, words", [
    ("--max-bytes", "100", "over the --max-bytes limit of 100"),
    ("--max-ranks", "1", "ngpus=2: over the --max-ranks limit of 1"),
    ("--max-chunks", "3", "ngpus=2 x nchunksperloop=2 = 4 chunks per buffer: over the --max-chunks limit of 3"),
    ("--max-tbs", "3", "more than 3 <tb> elements: over the --max-tbs limit of 3"),
    ("--max-steps", "5", "more than 5 <step> elements: over the --max-steps limit of 5"),
])
def test_limits_exit_2_and_say_how_to_raise_them(tmp_path: Path, capsys, option: str, value: str, words: str) -> None:
    path = write(tmp_path, allgather2())
    code, out, err = run(capsys, "verify", option, value, str(path))
    assert code == 2 and words in out and f"raise it (smtcoll verify {option} N)" in out
    assert "Traceback" not in out + err
    assert run(capsys, "verify", option, str(int(value) * 1000), str(path))[0] == 0


@needs_corpus
def test_default_limits_pass_every_real_file() -> None:
    for report in check_files(expand([str(CORPUS)]), jobs=1):
        assert not any("limit of" in v.message for v in report.violations), report.file


def test_a_checker_bug_is_a_message_and_exit_2_not_a_traceback(tmp_path: Path, capsys, monkeypatch) -> None:
    import smtcoll.check.door as door

    def broken(*args, **kwargs):
        raise ZeroDivisionError("division by zero")
    monkeypatch.setattr(door, "check_program", broken)
    code, out, err = run(capsys, "verify", str(write(tmp_path, allgather2())))
    assert code == 2 and "internal-error" in out and "ZeroDivisionError" in out and "please report" in out
    assert "Traceback" not in out + err
