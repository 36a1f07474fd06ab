"""The checker's one front door: `check(path | bytes, CheckRequest)`, and every caller going through it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smtcoll import verify
from smtcoll.check import CheckRequest, check
from smtcoll.check.files import check_file, check_files
from smtcoll.errors import UsageError
from smtcoll.msccl.reader import Limits

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _codes(report: object) -> list[tuple[str, str]]:
    return [(v.code, v.severity) for v in report.violations]  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["allgather-ring4.xml", "allgather-ring4-wrong.xml", "allgather-ring4.json",
                                  "formats/forestcoll-allgather-ring4.xml",
                                  "formats/taccl-allgather-2x2.sccl.json", "formats/teccl-allgather-mesh2.json"])
def test_bytes_are_judged_as_the_file_is(name: str) -> None:
    # (not the transfer logs of examples/: they name their topology relative to their own directory)
    path = EXAMPLES / name
    by_path, by_bytes = check(path), check(path.read_bytes())
    assert by_bytes.file == "<bytes>"
    assert (by_bytes.verdict, by_bytes.format, _codes(by_bytes)) == (by_path.verdict, by_path.format,
                                                                      _codes(by_path))


def test_the_request_reaches_the_checker() -> None:
    wrong = EXAMPLES / "allgather-ring4-wrong.xml"
    size = wrong.stat().st_size
    assert check(wrong, CheckRequest(limits=size - 1)).verdict == "unusable"
    over = check(wrong.read_bytes(), CheckRequest(limits=Limits(max_bytes=size - 1)))
    assert over.verdict == "unusable" and "--max-bytes" in over.violations[0].message
    assert check(wrong, CheckRequest(limits=size)).verdict == "error"
    # an XML program read as a schedule format is refused, by path and by bytes alike
    for source in (wrong, wrong.read_bytes()):
        r = check(source, CheckRequest(input_format="schedule-json"))
        assert r.verdict == "unusable" and r.format == "schedule-json"


def test_callers_agree() -> None:
    """`check_file`, `check_files` (with and without its process pool), `smtcoll.verify` and `check` give
    the same report for the same request."""
    files = [str(EXAMPLES / n) for n in ("allgather-ring4.xml", "allgather-ring4-wrong.xml")] * 4
    request = CheckRequest(runtime="executor")
    direct = [check(f, request) for f in files]
    assert check_files(files, request, jobs=1) == direct
    assert check_files(files, request, jobs=2) == direct  # 8 files: the process pool gets the request
    assert [check_file(f, runtime="executor") for f in files] == direct
    assert [verify(f, runtime="executor") for f in files] == direct


@pytest.mark.parametrize("field, value", [("runtime", "neither"), ("input_format", "yaml"), ("root", -1),
                                          ("chunks", 0)])
def test_a_bad_request_is_refused_by_name(field: str, value: object) -> None:
    with pytest.raises(UsageError, match=field):
        CheckRequest(**{field: value})  # type: ignore[arg-type]


def test_a_request_is_frozen_and_json_output_unchanged(tmp_path: Path) -> None:
    request = CheckRequest()
    with pytest.raises(AttributeError):
        request.strict = True  # type: ignore[misc]
    # the report a caller gets is the one `verify --format json` prints
    r = check(EXAMPLES / "allgather-ring4.xml")
    assert json.loads(json.dumps(r.to_json()))["verdict"] == "ok"
