"""The table of input formats (`smtcoll.formats.registry`): every format is one row, detection and the
`--input-format` choices come from it, and a new format is one module plus one row (the worked example of
docs/architecture.md is run here)."""

from __future__ import annotations

import re
import types
from pathlib import Path

import pytest

from smtcoll.check import CheckRequest, check
from smtcoll.check.discover import expand
from smtcoll.errors import InputError
from smtcoll.formats import inputs, registry
from smtcoll.formats.source import Source

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
KNOWN = {"allgather-ring4.xml": "msccl-xml", "allgather-ring4.json": "schedule-json",
         "formats/allgather-ring4.csv": "transfers-csv", "formats/forestcoll-allgather-ring4.xml": "forestcoll-xml",
         "formats/taccl-allgather-2x2.sccl.json": "taccl-json", "formats/teccl-allgather-mesh2.json": "teccl-json"}


@pytest.mark.parametrize("name, fmt", sorted(KNOWN.items()))
def test_detection_is_by_content(name: str, fmt: str) -> None:
    data = (EXAMPLES / name).read_bytes()
    assert fmt == registry.detect(Source(str(EXAMPLES / name), data)).NAME
    assert fmt == registry.detect(Source("no-suffix", data)).NAME  # the suffix is not needed


def test_the_suffix_decides_only_when_the_content_does_not() -> None:
    assert registry.detect(Source("a.xml", b"")).NAME == "msccl-xml"
    assert registry.detect(Source("a.csv", b"")).NAME == "transfers-csv"
    assert registry.detect(Source("a", b"")).NAME == registry.FORMATS[-1].NAME == "schedule-json"


def test_the_choices_come_from_the_table() -> None:
    names = [f.NAME for f in registry.FORMATS]
    assert len(set(names)) == len(names) and ("auto", *names) == inputs.INPUT_FORMATS
    for f in registry.FORMATS:  # every row provides the whole protocol
        assert callable(f.detect) and callable(f.read) and isinstance(f.SUFFIXES, tuple)
        assert all(issubclass(e, Exception) for e in f.ERRORS)


def test_a_reader_error_names_the_file_and_the_place(tmp_path: Path) -> None:
    bad = tmp_path / "flows.json"
    bad.write_text('{"1-Epoch_Duration": 1, "7-Flows": 3}')
    with pytest.raises(InputError, match=r"flows\.json: 7-Flows: expected a list"):
        inputs.read_input(str(bad))
    report = check(bad)
    assert report.verdict == "unusable" and "7-Flows: expected a list" in report.violations[0].message


def _example_module() -> types.ModuleType:
    text = (ROOT / "docs" / "architecture.md").read_text()
    code = re.search(r"<!-- format-example -->\n```python\n(.*?)```", text, re.S)
    assert code, "docs/architecture.md lost its worked example of a format module"
    module = types.ModuleType("sends_text")
    exec(compile(code.group(1), "docs/architecture.md", "exec"), module.__dict__)
    return module


def test_a_new_format_is_one_module_and_one_row(monkeypatch: pytest.MonkeyPatch) -> None:
    sends = _example_module()
    # ring:4 Allgather in 2 steps: each rank sends its chunk both ways, then forwards what came from the left
    first = [(0, r, r, d) for r in range(4) for d in ((r + 1) % 4, (r - 1) % 4)]
    second = [(1, (r - 1) % 4, r, (r + 1) % 4) for r in range(4)]
    good = b"# sends allgather ring:4\n" + b"".join(f"{s} {c} {r} {d}\n".encode() for s, c, r, d in first + second)
    # before the row is added, the file is not recognised
    assert check(good).verdict == "unusable"
    with pytest.raises(Exception, match="input_format"):
        CheckRequest(input_format="sends-text")
    monkeypatch.setattr(registry, "FORMATS", (*registry.FORMATS[:-1], sends, registry.FORMATS[-1]))
    report = check(good)
    assert (report.verdict, report.format) == ("ok", "sends-text")
    wrong = check(good.rsplit(b"\n", 2)[0] + b"\n")  # the last send is gone: rank 0 lacks a chunk
    assert wrong.verdict == "error" and "postcondition" in {v.code for v in wrong.violations}
    broken = check(good + b"3 x 0 1\n", CheckRequest(input_format="sends-text"))
    assert broken.verdict == "unusable" and "line 14: expected `step chunk src dst`" in broken.violations[0].message


def test_a_new_format_is_found_by_a_directory_walk(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    sends = _example_module()
    (tmp_path / "ag.sends").write_text("# sends allgather ring:4\n0 0 0 1\n")
    (tmp_path / "notes.sends").write_text("not sends\n")
    assert expand([str(tmp_path)]) == []
    monkeypatch.setattr(registry, "FORMATS", (*registry.FORMATS[:-1], sends, registry.FORMATS[-1]))
    assert expand([str(tmp_path)]) == [str(tmp_path / "ag.sends")]
