"""Reading MSCCL XML: a safe XML parse (defusedxml) plus the lexical rules of the runtimes' own readers.

Two layers, because the runtimes do not use an XML library (docs/msccl-format.md, "Reading rules"):

1. `defusedxml` (expat) parses the file with DTDs, entities and external references forbidden, after a
   size check, and builds the `Program` with the line of every element. A file it cannot parse, an empty
   file or a root other than `<algo>` raises `InputError` (unusable input, exit code 2).
2. A scan of the raw text applies the rules of the hand-written readers of both runtimes (no XML
   declaration, no tab or text between elements, one-line tags with single spaces between double-quoted
   attributes, at most 16 attributes, 255 characters per name or value). Their violations are findings
   that reject the file for the runtimes concerned; the program is still read, like an XML library would.

Integers are read like `strtol(s, NULL, 0)` into a C `int`: `0x10` is 16, `010` is 8, garbage is 0.
"""

from __future__ import annotations

import functools
import io
import os
import re
import xml.sax
from collections.abc import Iterable
from typing import Any

import attrs
import defusedxml
import defusedxml.expatreader

from smtcoll.errors import InputError
from smtcoll.msccl.program import RUNTIMES, Finding, Gpu, Op, Program, ThreadBlock

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 64  # the format has 4 levels; deeper nesting is refused before it costs anything
MAX_ATTRS = 16  # MAX_ATTR_COUNT of both readers: further attributes are silently dropped
MAX_STR = 255  # MAX_STR_LEN: longest attribute name or value
BOTH = frozenset(RUNTIMES)

INT_ATTRS = {
    "algo": ("nchannels", "nchunksperloop", "ngpus", "inplace", "outofplace", "minBytes", "maxBytes", "nthreads"),
    "gpu": ("id", "i_chunks", "o_chunks", "s_chunks"),
    "tb": ("id", "send", "recv", "chan"),
    "step": ("s", "srcoff", "dstoff", "cnt", "depid", "deps", "hasdep"),
}
INT64_ATTRS = frozenset({"minBytes", "maxBytes"})  # read with mscclXmlGetAttrInt64


@attrs.frozen
class Limits:
    """What the checker agrees to read, so that no file can make it run out of time or memory. Each limit
    is an option of `smtcoll verify` (`--max-bytes` ...); the defaults pass every real program seen (the
    largest public one: 2.7 MB, 64 ranks, 4064 thread blocks, 21648 steps) with a wide margin. A file
    over a limit is refused before its semantics are checked (unusable input, exit code 2)."""

    max_bytes: int = DEFAULT_MAX_BYTES  # file size, checked before parsing
    max_ranks: int = 4096  # ngpus and <gpu> elements (MAX_NODES of the runtimes' readers bounds it too)
    # ngpus x nchunksperloop, the chunks of one buffer over all ranks: the checker's values are sets of
    # input chunks, so its memory grows with the square of this (largest real program: 64 x 256 = 16384;
    # 65536 takes 0.4 s and 630 MB on a 4-rank alltoall, 32768 a quarter of that)
    max_chunks: int = 32768
    max_tbs: int = 65536  # <tb> elements of the whole file
    max_steps: int = 262144  # <step> elements of the whole file

    def exceeded(self, option: str, what: str, limit: int) -> str:
        return (f"{what}: over the {option} limit of {limit}; if the file is genuine, raise it "
                f"(smtcoll verify {option} N)")


def _findings(items: Iterable[Finding]) -> tuple[Finding, ...]:
    return tuple(items)


@attrs.frozen
class ReadResult:
    """The program as the runtimes would see it, and what the reader found on the way."""

    program: Program
    findings: tuple[Finding, ...] = attrs.field(converter=_findings)
    size: int = 0


# ---------------------------------------------------------------------------------------------------
# strtol
_STRTOL = re.compile(r"[ \t\n\v\f\r]*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")


@functools.lru_cache(maxsize=4096)
def strtol(text: str, bits: int = 32) -> tuple[int, str | None]:
    """The value `strtol(text, NULL, 0)` gives once stored in a signed integer of `bits` bits, and what
    is unusual about the text: None (plain decimal), `hex`, `octal`, `garbage` (read as 0 or only its
    leading number is read) or `overflow`."""
    m = _STRTOL.match(text)
    if not m:
        return 0, "garbage"
    sign, body = m.groups()
    if body[:2] in ("0x", "0X"):
        value, kind = int(body, 16), "hex"
    elif len(body) > 1 and body[0] == "0":
        value, kind = int(body, 8), "octal"
    else:
        value, kind = int(body), None
    if sign == "-":
        value = -value
    if m.end() != len(text):
        kind = "garbage"
    long_max = 2**63 - 1
    if value > long_max or value < -long_max - 1:  # strtol clamps to LONG_MIN/LONG_MAX
        value, kind = (long_max if value > 0 else -long_max - 1), "overflow"
    wrapped = (value + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)  # stored in an int / int64_t
    if wrapped != value:
        kind = "overflow"
    return wrapped, kind


# ---------------------------------------------------------------------------------------------------
# lexical rules of the runtimes' readers
_TOKEN = re.compile(r"<!--.*?-->|<[^<>]*>?", re.S)
_TAG_OK = re.compile(r'</?[^\s<>/="\']+(?: [^\s<>/="\']+="[^"]*")*(?: ?/)? ?>')
_ATTR = re.compile(r'([^\s<>/="\']+)\s*=\s*(?:"([^"]*)"|\'([^\']*)\')')
_LONG = re.compile(r'"[^"<>]{%d,}"|[^\s<>="\']{%d,}\s*=' % (MAX_STR + 1, MAX_STR + 1))


def lexical_findings(text: str) -> list[Finding]:
    """Violations of the hand-written readers' rules, each with its line (both runtimes share them)."""
    out: list[Finding] = []
    seen: set[str] = set()

    def add(kind: str, message: str, pos: int) -> None:
        if kind in seen:  # the reader stops at the first error; report each kind once
            return
        seen.add(kind)
        out.append(Finding("parse-rule", message, {"line": text.count("\n", 0, pos) + 1}, BOTH))

    last = 0
    tag_ok = _TAG_OK.fullmatch
    for m in _TOKEN.finditer(text):
        start = m.start()
        if start != last:
            between = text[last:start]
            bad = between.strip(" \r\n")
            if bad:
                add("text", f"the runtimes' XML readers accept only spaces and newlines between elements; "
                            f"found {bad[0]!r} (expecting '<')", last + between.index(bad[0]))
        last = m.end()
        tok = m.group()
        if tag_ok(tok):
            continue
        if tok.startswith("<!--"):
            continue
        if tok.startswith("<?"):
            add("decl", "XML declarations and processing instructions (<?...?>) are refused by the runtimes' "
                        "readers (expected '>', got '?'); remove the <?xml ...?> line", start)
        elif tok.startswith("<!"):
            add("doctype", "declarations (<!...>) are refused by the runtimes' readers", start)
        elif "\n" in tok or "\r" in tok:
            add("multiline", "a tag spans several lines; the runtimes' readers need each tag on one line", start)
        elif "\t" in tok:
            add("tab", "a tab inside a tag; the runtimes' readers separate attributes by single spaces only", start)
        elif any(a.group(3) is not None for a in _ATTR.finditer(tok)):
            add("quote", "a single-quoted attribute value; the runtimes' readers scan values up to the next "
                         "double quote", start)
        else:
            add("syntax", "the runtimes' readers need `name=\"value\"` attributes separated by single spaces",
                start)
    long = _LONG.search(text)
    if long:
        add("long", f"an attribute name or value is longer than {MAX_STR} characters (MAX_STR_LEN)", long.start())
    return out


# ---------------------------------------------------------------------------------------------------
# the safe XML parse
class _Stop(Exception):
    def __init__(self, message: str, line: int | None) -> None:
        self.message, self.line = message, line


class _Builder(xml.sax.ContentHandler):
    """Builds the program from SAX events; keeps only what the runtimes would see."""

    def __init__(self, limits: Limits) -> None:
        super().__init__()
        self.limits = limits
        self.counts = {"gpu": 0, "tb": 0, "step": 0}
        self.locator: Any = None
        self.depth = 0
        self.path: list[str] = []
        self.findings: list[Finding] = []
        self.algo: dict[str, Any] | None = None
        self.gpus: list[dict[str, Any]] = []
        self.gpu: dict[str, Any] | None = None
        self.tb: dict[str, Any] | None = None
        self.ignored: dict[str, int] = {}

    def setDocumentLocator(self, locator: Any) -> None:  # noqa: N802 (SAX API)
        self.locator = locator

    def _line(self) -> int:
        return self.locator.getLineNumber() if self.locator is not None else 0

    def _attrs(self, tag: str, attributes: Any, line: int, where: dict[str, Any]) -> dict[str, Any]:
        names = list(attributes.getNames())
        if len(names) > MAX_ATTRS:
            dropped = names[MAX_ATTRS:]
            listed = ", ".join(n[:40] for n in dropped[:8])
            if len(dropped) > 8:
                listed += f" and {len(dropped) - 8} more"
            self.findings.append(Finding(
                "attribute-dropped", f"<{tag}> has {len(names)} attributes; the runtimes keep the first "
                f"{MAX_ATTRS} and silently drop {listed}", {**where, "line": line}, severity="warning"))
            names = names[:MAX_ATTRS]
        out: dict[str, Any] = {"line": line, "_names": tuple(names)}
        ints = INT_ATTRS.get(tag, ())
        get = attributes.getValue
        for name in names:
            raw = get(name)
            if name in ints:
                value, kind = strtol(raw, 64 if name in INT64_ATTRS else 32)
                if kind is not None:
                    self._odd_integer(tag, name, raw, value, kind, {**where, "line": line})
                out[name] = value
            else:  # longer values are refused by the runtimes (MAX_STR_LEN); keep messages short
                out[name] = raw if len(raw) <= MAX_STR else raw[:MAX_STR + 1]
        return out

    def _odd_integer(self, tag: str, name: str, raw: str, value: int, kind: str, where: dict[str, Any]) -> None:
        if kind in ("garbage", "overflow"):
            self.findings.append(Finding(
                "bad-integer", f"<{tag}> {name}={raw[:40]!r} is not an integer the runtimes can hold; they read "
                f"it as {value} (strtol into a C integer)", where))
        else:
            self.findings.append(Finding(
                "integer-format", f"<{tag}> {name}={raw!r} is read as {kind}: the runtimes see {value}",
                where, severity="warning"))

    def startElement(self, name: str, attributes: Any) -> None:  # noqa: N802 (SAX API)
        line = self._line()
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Stop(f"elements nested deeper than {MAX_DEPTH} levels; an MSCCL program has 4", line)
        parent = self.path[-1] if self.path else None
        self.path.append(name)
        if name in self.counts:
            self._count(name, line)
        if parent is None:
            if name != "algo":
                raise _Stop(f"the root element is <{name[:40]}>, an MSCCL program has <algo>", line)
            self.algo = self._attrs("algo", attributes, line, {})
            ngpus = self.algo.get("ngpus")
            if isinstance(ngpus, int) and ngpus > self.limits.max_ranks:
                raise _Stop(self.limits.exceeded("--max-ranks", f"ngpus={ngpus}", self.limits.max_ranks), line)
            chunks = self.algo.get("nchunksperloop")
            if isinstance(ngpus, int) and isinstance(chunks, int) and ngpus > 0 and chunks > 0 and \
                    ngpus * chunks > self.limits.max_chunks:
                raise _Stop(self.limits.exceeded("--max-chunks", f"ngpus={ngpus} x nchunksperloop={chunks} = "
                                                 f"{ngpus * chunks} chunks per buffer", self.limits.max_chunks), line)
        elif parent == "algo" and name == "gpu":
            self.gpu = self._attrs("gpu", attributes, line, {})
            self.gpu["tbs"], self.gpu["copies"] = [], 0
            self.gpus.append(self.gpu)
        elif parent == "gpu" and name == "tb" and self.gpu is not None:
            self.tb = self._attrs("tb", attributes, line, {"gpu": self.gpu.get("id")})
            self.tb["steps"] = []
            self.gpu["tbs"].append(self.tb)
        elif parent == "tb" and name == "step" and self.tb is not None and self.gpu is not None:
            where = {"gpu": self.gpu.get("id"), "tb": self.tb.get("id")}
            self.tb["steps"].append(self._attrs("step", attributes, line, where))
        elif parent == "gpu" and name == "copy" and self.gpu is not None:
            self.gpu["copies"] += 1
        else:
            self.ignored[name] = self.ignored.get(name, 0) + 1
            if self.ignored[name] == 1:
                inside = f" inside <{parent}>" if parent else ""
                self.findings.append(Finding(
                    "ignored-element", f"<{name[:40]}>{inside} is not part of the format; the runtimes skip it",
                    {"line": line}, severity="info"))

    def _count(self, name: str, line: int) -> None:
        n = self.counts[name] = self.counts[name] + 1
        option, limit = {"gpu": ("--max-ranks", self.limits.max_ranks), "tb": ("--max-tbs", self.limits.max_tbs),
                         "step": ("--max-steps", self.limits.max_steps)}[name]
        if n > limit:
            raise _Stop(self.limits.exceeded(option, f"more than {limit} <{name}> elements", limit), line)

    def endElement(self, name: str) -> None:  # noqa: N802 (SAX API)
        self.depth -= 1
        self.path.pop()
        if name == "tb":
            self.tb = None
        elif name == "gpu":
            self.gpu = None


def _parse(data: bytes, path: str, limits: Limits) -> _Builder:
    builder = _Builder(limits)
    parser = defusedxml.expatreader.create_parser(forbid_dtd=True, forbid_entities=True, forbid_external=True)
    parser.setContentHandler(builder)
    parser.setFeature(xml.sax.handler.feature_external_ges, False)
    try:
        parser.parse(io.BytesIO(data))
    except _Stop as e:
        raise InputError(path, e.message, e.line) from None
    except defusedxml.DTDForbidden:
        raise InputError(path, "the file has a DTD (<!DOCTYPE>); refused: DTDs allow entity bombs and "
                               "external references, and no MSCCL runtime reads them", builder._line()) from None
    except defusedxml.EntitiesForbidden:
        raise InputError(path, "the file declares entities; refused (entity expansion bombs)", builder._line()) from None
    except defusedxml.ExternalReferenceForbidden:
        raise InputError(path, "the file references an external resource; refused", builder._line()) from None
    except defusedxml.DefusedXmlException as e:
        raise InputError(path, f"refused: {e}") from None
    except xml.sax.SAXParseException as e:
        raise InputError(path, f"column {e.getColumnNumber()}: not well-formed XML: {e.getMessage()}",
                         e.getLineNumber()) from None
    except (RecursionError, MemoryError):
        raise InputError(path, "the XML structure is too large or too deep") from None
    if builder.algo is None:
        raise InputError(path, "no root element: an MSCCL program has <algo>")
    return builder


def _int(d: dict[str, Any], key: str) -> int | None:
    v = d.get(key)
    return v if isinstance(v, int) else None


def _str(d: dict[str, Any], key: str) -> str | None:
    v = d.get(key)
    return v if isinstance(v, str) else None


def read_program_bytes(data: bytes, path: str = "<xml>", limits: Limits | None = None) -> ReadResult:
    """Parse the bytes of an MSCCL XML file; `InputError` when it is not a usable XML `<algo>` document or
    is over one of the `limits`."""
    limits = limits or Limits()
    if len(data) > limits.max_bytes:
        raise InputError(path, limits.exceeded("--max-bytes", f"{len(data)} bytes", limits.max_bytes))
    if not data.strip():
        raise InputError(path, "empty file: an MSCCL program needs an <algo> element (the legacy runtime "
                               "crashes on it, the executor refuses it)")
    builder = _parse(data, path, limits)
    text = data.decode("utf-8", errors="replace")
    findings = lexical_findings(text) + builder.findings
    a = builder.algo
    assert a is not None
    gpus = []
    for g in builder.gpus:
        tbs = []
        for t in g["tbs"]:
            ops = [Op(_int(s, "s"), _str(s, "type"), _str(s, "srcbuf"), _int(s, "srcoff"), _str(s, "dstbuf"),
                      _int(s, "dstoff"), _int(s, "cnt"), _int(s, "depid"), _int(s, "deps"), _int(s, "hasdep"),
                      s["line"]) for s in t["steps"]]
            tbs.append(ThreadBlock(_int(t, "id"), _int(t, "send"), _int(t, "recv"), _int(t, "chan"), ops,
                                   t["line"]))
        gpus.append(Gpu(_int(g, "id"), _int(g, "i_chunks"), _int(g, "o_chunks"), _int(g, "s_chunks"), tbs,
                        g["line"], g["copies"]))
    program = Program(
        _str(a, "name"), _str(a, "proto"), _int(a, "nchannels"), _int(a, "nchunksperloop"), _int(a, "ngpus"),
        _str(a, "coll"), _int(a, "inplace"), _int(a, "outofplace"), _int(a, "minBytes"), _int(a, "maxBytes"),
        _int(a, "nthreads"), _str(a, "redop"), gpus, a["line"], a["_names"])
    return ReadResult(program, findings, len(data))


def read_program(path: str | os.PathLike[str], max_bytes: int | None = None,
                 limits: Limits | None = None) -> ReadResult:
    """Read an MSCCL XML file, refusing files over the size limit before parsing them (`max_bytes`, when
    given, overrides `limits.max_bytes`)."""
    name = os.fspath(path)
    limits = limits or Limits()
    if max_bytes is not None:
        limits = attrs.evolve(limits, max_bytes=max_bytes)
    try:
        size = os.stat(name).st_size
        if size > limits.max_bytes:
            raise InputError(name, limits.exceeded("--max-bytes", f"file is {size} bytes", limits.max_bytes))
        with open(name, "rb") as f:
            data = f.read(limits.max_bytes + 1)
    except OSError as e:
        raise InputError(name, f"cannot read: {e.strerror or e}") from None
    if len(data) > limits.max_bytes:  # grew since the stat, or not a regular file
        raise InputError(name, limits.exceeded("--max-bytes", f"more than {limits.max_bytes} bytes",
                                               limits.max_bytes))
    return read_program_bytes(data, name, limits)
