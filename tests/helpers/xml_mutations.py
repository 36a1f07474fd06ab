"""Hypothesis strategies that break MSCCL XML files in the ways real and hostile files are broken, and the
properties every checker run must keep. Shared by tests/test_fuzz_verify.py and benchmarks/fuzz_verify.py.

A mutant is bytes: structural edits of the element tree (delete, duplicate, swap elements; delete, swap
attributes; garbage, negative, huge, non-decimal values), then optionally text edits (truncation, random
bytes, duplicated attributes, deep nesting) and a re-encoding (UTF-16 with or without BOM, UTF-8 BOM,
Latin-1 with a declaration, an undeclared wrong encoding).
"""

from __future__ import annotations

import atexit
import copy
import json
import os
import shutil
import signal
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis import strategies as st

from helpers import paths
from smtcoll.check.files import check_file
from smtcoll.check.report import Report
from smtcoll.cli.verify import exit_code
from smtcoll.cli.verify_output import format_github, format_junit, format_text

CORPUS = paths.CORPUS / "msccl-xml"

VALUES = st.one_of(
    st.integers(-3, 80).map(str),
    st.sampled_from(["-1", "-2147483649", "2147483648", "2147483647", "65536", "16384", "4097", "1024", "255",
                     "9" * 40, "0x1F", "0X7fffffff", "017", "08", "",
                     " 1", "1 ", "+5", "-0", "1e3", "nan", "0b101", "１", "٣", "1\u00a0", "i", "o", "s", "nop",
                     "re", "rrcs", "allgather", "reducescatter", "Simple", "LL128", "&amp;", "&#0;", "\t1"]),
    st.text(max_size=12),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
)


def _elements(root: ET.Element) -> list[tuple[ET.Element, ET.Element | None]]:
    """(element, parent) of every element, root first."""
    out: list[tuple[ET.Element, ET.Element | None]] = [(root, None)]
    for parent in root.iter():
        out += [(child, parent) for child in parent]
    return out


@st.composite
def tree_edits(draw: st.DrawFn, text: bytes) -> bytes:
    """Edit the element tree: 1 to 4 structural or attribute edits (none when the seed is not XML)."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        return text
    for _ in range(draw(st.integers(1, 4))):
        elements = _elements(root)
        element, parent = elements[draw(st.integers(0, len(elements) - 1))]
        kind = draw(st.sampled_from(["delete", "duplicate", "swap", "del-attr", "set-attr", "swap-attr",
                                     "new-attr", "wrong-parent"]))
        if kind in ("delete", "duplicate", "swap", "wrong-parent") and parent is None:
            kind = "set-attr"
        if kind == "delete" and parent is not None:
            parent.remove(element)
        elif kind == "duplicate" and parent is not None:
            parent.insert(list(parent).index(element), copy.deepcopy(element))
        elif kind == "swap" and parent is not None:
            siblings = list(parent)
            j = draw(st.integers(0, len(siblings) - 1))
            i = siblings.index(element)
            parent[i], parent[j] = siblings[j], siblings[i]
        elif kind == "wrong-parent" and parent is not None:
            target = elements[draw(st.integers(0, len(elements) - 1))][0]
            if target is not element and element not in target.iter():
                parent.remove(element)
                target.append(element)
        elif kind == "del-attr" and element.attrib:
            del element.attrib[draw(st.sampled_from(sorted(element.attrib)))]
        elif kind == "swap-attr" and len(element.attrib) > 1:
            a, b = draw(st.lists(st.sampled_from(sorted(element.attrib)), min_size=2, max_size=2, unique=True))
            element.attrib[a], element.attrib[b] = element.attrib[b], element.attrib[a]
        elif kind == "new-attr":
            element.set(draw(st.sampled_from(["s", "cnt", "depid", "id", "chan", "ngpus", "x", "outofplace"])),
                        draw(VALUES))
        elif element.attrib:
            element.set(draw(st.sampled_from(sorted(element.attrib))), draw(VALUES))
    return ET.tostring(root)


@st.composite
def text_edits(draw: st.DrawFn, data: bytes) -> bytes:
    kind = draw(st.sampled_from(["none"] * 4 + ["truncate", "bytes", "dup-attr", "nest", "comment", "tab", "decl"]))
    if kind == "truncate":
        return data[:draw(st.integers(0, len(data)))]
    if kind == "bytes":
        at = draw(st.integers(0, len(data)))
        return data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
    if kind == "dup-attr":
        return data.replace(b' cnt="', b' cnt="2" cnt="', 1)
    if kind == "nest":
        depth = draw(st.sampled_from([10, 70, 1000, 20000]))
        inner = data.find(b">") + 1
        return data[:inner] + b"<x>" * depth + b"</x>" * depth + data[inner:]
    if kind == "comment":
        return data.replace(b"<tb", b"<!-- a comment -- with dashes --><tb", 1)
    if kind == "tab":
        return data.replace(b" ", b"\t", draw(st.integers(1, 3)))
    if kind == "decl":
        return b'<?xml version="1.0"?>\n' + data
    return data


@st.composite
def encodings(draw: st.DrawFn, data: bytes) -> bytes:
    kind = draw(st.sampled_from(["utf-8"] * 8 + ["bom8", "utf-16", "utf-16-le", "latin-1-decl",
                                 "latin-1-undeclared", "utf-32"]))
    text = data.decode("utf-8", errors="replace")
    if kind == "bom8":
        return b"\xef\xbb\xbf" + data
    if kind == "utf-16":
        return text.encode("utf-16")  # with BOM
    if kind == "utf-16-le":
        return text.encode("utf-16-le")  # no BOM: not XML
    if kind == "utf-32":
        return text.encode("utf-32")
    if kind == "latin-1-decl":
        return (b'<?xml version="1.0" encoding="ISO-8859-1"?>\n'
                + text.replace('name="', 'name="\u00e9', 1).encode("latin-1", errors="replace"))
    if kind == "latin-1-undeclared":
        return text.replace('name="', 'name="\u00e9', 1).encode("latin-1", errors="replace")
    return data


def mutants(seeds: list[bytes]) -> st.SearchStrategy[bytes]:
    return (st.sampled_from(seeds).flatmap(lambda s: st.one_of(st.just(s), tree_edits(s)))
            .flatmap(text_edits).flatmap(encodings))


def seeds(max_bytes: int = 6000) -> list[bytes]:
    """Small correct and wrong corpus files (all of them when `max_bytes` is 0)."""
    if not CORPUS.is_dir():
        from helpers.xmlgen import allgather2, allreduce2
        return [allgather2().encode(), allreduce2().encode()]
    files = sorted(p for p in CORPUS.rglob("*.xml") if p.stat().st_size > 0)
    return [p.read_bytes() for p in files if not max_bytes or p.stat().st_size <= max_bytes]


# ---------------------------------------------------------------------------------------------------
# the properties
@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Fail instead of hanging (no timing is asserted: the bound is 10-100x the usual time)."""
    def stop(*_: object) -> None:
        raise TimeoutError(f"the checker ran over {seconds} s")
    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


_DIR = tempfile.mkdtemp(prefix="smtcoll-fuzz-")
atexit.register(shutil.rmtree, _DIR, True)


def check_mutant(data: bytes, seconds: int = 30) -> Report:
    """Check the mutant as `smtcoll verify` does, and assert what must hold whatever the input."""
    path = os.path.join(_DIR, "mutant.xml")
    with open(path, "wb") as f:
        f.write(data)
    with time_limit(seconds):
        report = check_file(path, "any", None, None, None)
    assert report.verdict in ("ok", "error", "unusable")
    assert not any(v.code == "internal-error" for v in report.violations), report.violations
    assert exit_code([report]) == {"ok": 0, "error": 1, "unusable": 2}[report.verdict]
    if report.verdict != "ok":
        assert any(v.severity == "error" and v.message for v in report.violations)
    for v in report.violations:
        assert v.message and "Traceback" not in v.message and len(v.message) < 5000
    json.dumps(report.to_json())
    format_text([report])
    ET.fromstring(format_junit([report]).encode())
    assert all(line.startswith(("::", "1 file(s)")) for line in format_github([report]).splitlines())
    return report
