"""The MSCCL XML reader: safe parsing, element lines, strtol integers and the runtimes' lexical rules."""

from __future__ import annotations

import pytest
from helpers.xmlgen import algo, allgather2, gpu, step, tb

from smtcoll.errors import InputError
from smtcoll.msccl import read_program_bytes
from smtcoll.msccl.reader import Limits, lexical_findings, read_program, strtol


@pytest.mark.parametrize("text, value, kind", [
    ("10", 10, None), ("-1", -1, None), ("0", 0, None), ("0x10", 16, "hex"), ("010", 8, "octal"),
    ("abc", 0, "garbage"), ("12abc", 12, "garbage"), (" 7", 7, None), ("4294967300", 4, "overflow"),
    ("", 0, "garbage"), ("0x", 0, "garbage"),
])
def test_strtol_reads_like_the_runtimes(text: str, value: int, kind: str | None) -> None:
    assert strtol(text) == (value, kind)


def test_reads_program_with_lines() -> None:
    r = read_program_bytes(allgather2().encode())
    p = r.program
    assert (p.coll, p.ngpus, p.nchunksperloop, p.proto, p.dialect) == ("allgather", 2, 2, "Simple", "executor")
    assert [g.id for g in p.gpus] == [0, 1]
    g0 = p.gpus[0]
    assert g0.line == 2 and g0.tbs[0].line == 3 and g0.tbs[0].steps[0].line == 4
    op = g0.tbs[1].steps[0]
    assert (op.s, op.type, op.srcbuf, op.srcoff, op.dstbuf, op.dstoff, op.cnt, op.depid, op.deps, op.hasdep) == \
        (0, "s", "o", 0, "o", 0, 1, 0, 0, 0)
    assert p.steps == 6
    assert not [f for f in r.findings if f.code == "parse-rule"]


def test_legacy_dialect_without_outofplace() -> None:
    p = read_program_bytes(algo(gpu(0, 1, 2, 0), gpu(1, 1, 2, 0), outofplace=None).encode()).program
    assert p.dialect == "legacy" and p.outofplace is None and p.max_bytes is None


def test_missing_attribute_is_none_not_an_error_of_the_reader() -> None:
    text = allgather2().replace(' hasdep="1"', "", 1)
    p = read_program_bytes(text.encode()).program
    assert p.gpus[0].tbs[0].steps[0].hasdep is None


def _lexical_kinds(text: str) -> list[str]:
    return [f.message for f in lexical_findings(text)]


def test_clean_file_has_no_lexical_findings() -> None:
    assert lexical_findings(allgather2()) == []
    assert lexical_findings('<algo a="1">\n  <!-- a\tcomment -->\n  <gpu id="0" />\n</algo>\n') == []


@pytest.mark.parametrize("text, words", [
    ('<?xml version="1.0"?>\n<algo a="1"></algo>', "declaration"),
    ('<algo a="1">\n\t<gpu id="0"/>\n</algo>', "'\\t'"),
    ('<algo a="1"\n b="2"></algo>', "several lines"),
    ("<algo a='1'></algo>", "single-quoted"),
    ('<algo a="1"  b="2"></algo>', "single spaces"),
    ('<algo a="%s"></algo>' % ("x" * 256), "255"),
])
def test_lexical_rules_of_the_runtime_readers(text: str, words: str) -> None:
    found = lexical_findings(text)
    assert found and words in found[0].message
    assert found[0].rejects == {"executor", "legacy"}
    assert found[0].where["line"] >= 1


def test_lexical_finding_points_at_the_line() -> None:
    text = allgather2().replace('  <gpu id="1"', '\t<gpu id="1"')
    (f,) = lexical_findings(text)
    assert f.where["line"] == text[: text.index("\t")].count("\n") + 1


def test_more_than_16_attributes_drops_the_rest() -> None:
    extra = " ".join(f'x{i}="0"' for i in range(16))
    text = allgather2().replace('<gpu id="0"', f'<gpu {extra} id="0"')
    r = read_program_bytes(text.encode())
    assert any(f.code == "attribute-dropped" for f in r.findings)
    assert r.program.gpus[0].id is None  # dropped like the runtimes drop it


def test_garbage_and_octal_integers_are_reported() -> None:
    text = allgather2().replace('nchannels="1"', 'nchannels="01"').replace('<gpu id="1"', '<gpu id="one"')
    r = read_program_bytes(text.encode())
    codes = {f.code: f for f in r.findings}
    assert codes["integer-format"].severity == "warning"
    assert codes["bad-integer"].severity == "error" and "read it as 0" in codes["bad-integer"].message


HOSTILE = {
    "empty": b"",
    "blank": b"  \n ",
    "not xml": b"hello, world",
    "binary": bytes(range(256)),
    "truncated": b'<algo name="x"><gpu id="0">',
    "wrong root": b'<foo name="x"/>',
    "billion laughs": b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>'
                      b"<algo>&lol2;</algo>",
    "external entity": b'<!DOCTYPE algo [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><algo>&xxe;</algo>',
    "quadratic blowup": b'<!DOCTYPE algo [<!ENTITY a "' + b"x" * 10000 + b'">]><algo>' + b"&a;" * 1000 + b"</algo>",
}


def test_deep_nesting_is_skipped_like_the_runtimes_without_recursion() -> None:
    # the runtimes' reader skips an unknown element by counting depth (msccl_parser.cc mscclXmlLoadSub with
    # no handlers): 50000 levels cost nothing and leave an <algo> without gpus
    r = read_program_bytes(b'<algo ngpus="1">' + b"<x>" * 50000 + b"</x>" * 50000 + b"</algo>", "f.xml")
    assert r.program.ngpus == 1 and r.program.gpus == ()
    assert any(f.code == "ignored-element" for f in r.findings)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_input_is_refused_with_a_message(name: str) -> None:
    with pytest.raises(InputError) as e:
        read_program_bytes(HOSTILE[name], "f.xml")
    assert str(e.value).startswith("f.xml")
    assert "Traceback" not in str(e.value)


def test_size_limit_is_checked_before_parsing(tmp_path) -> None:
    path = tmp_path / "big.xml"
    path.write_text(allgather2())
    with pytest.raises(InputError, match="limit"):
        read_program(path, max_bytes=100)
    assert read_program(path).program.ngpus == 2


def test_huge_numbers_are_read_without_allocating() -> None:
    text = algo(gpu(0, 1, 2, 0, tb(0, -1, -1, 0, step(0, "cpy", "i", 0, "o", 0))), ngpus=1000000000)
    read = read_program_bytes(text.encode(), limits=Limits(max_ranks=2**31, max_chunks=2**40))
    assert read.program.ngpus == 1000000000
    with pytest.raises(InputError, match="--max-ranks"):
        read_program_bytes(text.encode())
