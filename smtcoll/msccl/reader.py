"""Reading MSCCL XML: the program the runtimes load, read byte for byte like their own readers.

1. `runtime_reader` reads the file as both runtimes' hand-written readers do (raw values, names up to a
   space, elements by path, skipped subtrees, crashes) and `_from_document` builds the `Program` from the
   elements they load, with the line of every element and a finding for everything they skip, drop or
   refuse. The program checked is the one the runtimes run.
2. expat (no DTD, no entity declaration, nothing expanded) only says whether the file is also well-formed
   XML: a file the runtimes load but an XML library cannot read gets a `not-well-formed` warning.
3. When the runtimes' reader refuses the file, the program `defusedxml` reads is checked instead, with the
   refusal as a finding, so that the user still sees the other defects. A file neither can read raises
   `InputError` (unusable input, exit code 2).

Integers are read like `strtol(s, NULL, 0)` into a C `int`: `0x10` is 16, `010` is 8, garbage is 0.
`lexical_findings` states the readers' rules as a style check of written files (the writer's tests).
"""

from __future__ import annotations

import functools
import io
import os
import re
import xml.parsers.expat
import xml.sax
from collections.abc import Iterable
from typing import Any

import attrs

from smtcoll.errors import InputError
from smtcoll.msccl.program import RUNTIMES, Finding, Gpu, Op, Program, ThreadBlock
from smtcoll.msccl.runtime import EXEC, PROFILES
from smtcoll.msccl.runtime_reader import Document, Element, Node, read_document

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
# what the executor's metadata stage needs on the first element of the file (msccl_parser.cc)
EXEC_META_REQUIRED = ("nchunksperloop", "nchannels", "ngpus", "coll", "minBytes", "maxBytes", "inplace", "outofplace")
EXEC_META_COLLS = PROFILES[EXEC].colls
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
    max_tbs: int = 16384  # <tb> elements of the whole file (4 times the largest real program's)
    max_steps: int = 65536  # <step> elements of the whole file (3 times the largest real program's)
    # chunk pieces the simulation moves: the sum of every step's cnt (at most 71 each), 10 times the largest
    # real program's (20160); the costliest shapes found (both modes, sends and reductions of cnt=71 on 32
    # channels, races everywhere) take under 5 CPU seconds at this limit
    max_pieces: int = 200000

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
    elif len(body) > 40:  # beyond any 64-bit value (and int() refuses more than 4300 digits): clamped below
        value, kind = 10 ** 40, None
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
_LONG = re.compile(rf'"[^"<>]{{{MAX_STR + 1},}}"|[^\s<>="\']{{{MAX_STR + 1},}}\s*=')


def lexical_findings(text: str) -> list[Finding]:
    """Violations of the hand-written readers' rules, each with its line (both runtimes share them)."""
    out: list[Finding] = []
    seen: set[str] = set()

    def add(kind: str, message: str, pos: int) -> None:
        if kind in seen:  # the reader stops at the first error; report each kind once
            return
        seen.add(kind)
        out.append(Finding("parse-rule", message, where={"line": text.count("\n", 0, pos) + 1}, rejects=BOTH))

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

    def setDocumentLocator(self, locator: Any) -> None:
        self.locator = locator

    def _line(self) -> int:
        return self.locator.getLineNumber() if self.locator is not None else 0

    def _attrs(self, tag: str, attributes: Any, line: int, where: dict[str, Any]) -> dict[str, Any]:
        names = list(attributes.getNames())
        get = attributes.getValue
        return self.values(tag, [(n, get(n)) for n in names[:MAX_ATTRS]], max(0, len(names) - MAX_ATTRS),
                           line, where)

    def element(self, tag: str, e: Element | Node, where: dict[str, Any]) -> dict[str, Any]:
        """The attributes of an element the runtimes' reader loaded (raw values, first occurrence wins)."""
        return self.values(tag, list(e.attributes), e.dropped, e.line, where)

    def values(self, tag: str, pairs: list[tuple[str, str]], dropped: int, line: int,
               where: dict[str, Any]) -> dict[str, Any]:
        if dropped:
            self.findings.append(Finding(
                "attribute-dropped", f"<{tag}> has {len(pairs) + dropped} attributes; the runtimes keep the first "
                f"{MAX_ATTRS} and silently drop the other {dropped}", where={**where, "line": line},
                severity="warning"))
        out: dict[str, Any] = {"line": line}
        names: list[str] = []
        seen: set[str] = set()
        ints = INT_ATTRS.get(tag, ())
        for name, raw in pairs:
            if name in seen:
                if name:
                    self.findings.append(Finding(
                        "attribute-repeated", f"<{tag}> gives {name[:40]} twice; the runtimes read the first "
                        f"({out[name]!r}) and ignore the later one", where={**where, "line": line}, severity="warning"))
                continue
            seen.add(name)
            names.append(name)
            if not name:
                continue  # an empty name: a double space, or `="..."` after a space
            if name in ints:
                value, kind = strtol(raw, 64 if name in INT64_ATTRS else 32)
                if kind is not None:
                    self._odd_integer(tag, name, raw, value, kind, {**where, "line": line})
                out[name] = value
            else:  # strings are compared whole and raw by the runtimes; keep messages short
                out[name] = raw if len(raw) <= MAX_STR else raw[:MAX_STR + 1]
        out["_names"] = tuple(names)
        return out

    def _odd_integer(self, tag: str, name: str, raw: str, value: int, kind: str, where: dict[str, Any]) -> None:
        if kind in ("garbage", "overflow"):
            self.findings.append(Finding(
                "bad-integer", f"<{tag}> {name}={raw[:40]!r} is not an integer the runtimes can hold; they read "
                f"it as {value} (strtol into a C integer)", where=where))
        else:
            self.findings.append(Finding(
                "integer-format", f"<{tag}> {name}={raw!r} is read as {kind}: the runtimes see {value}",
                where=where, severity="warning"))

    def startElement(self, name: str, attributes: Any) -> None:
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
                    where={"line": line}, severity="info"))

    def _count(self, name: str, line: int) -> None:
        n = self.counts[name] = self.counts[name] + 1
        option, limit = {"gpu": ("--max-ranks", self.limits.max_ranks), "tb": ("--max-tbs", self.limits.max_tbs),
                         "step": ("--max-steps", self.limits.max_steps)}[name]
        if n > limit:
            raise _Stop(self.limits.exceeded(option, f"more than {limit} <{name}> elements", limit), line)

    def endElement(self, name: str) -> None:
        self.depth -= 1
        self.path.pop()
        if name == "tb":
            self.tb = None
        elif name == "gpu":
            self.gpu = None


def _parse(data: bytes, path: str, limits: Limits) -> _Builder:
    # only for a file the runtimes' reader refuses: defusedxml's SAX reader imports urllib, http and ssl
    import defusedxml
    import defusedxml.expatreader

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
        raise InputError(path, "the file declares entities; refused (entity expansion bombs)",
                         builder._line()) from None
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
    """Read the bytes of an MSCCL XML file as the runtimes' readers do (`runtime_reader`); `InputError`
    when no runtime can read a program from it and no XML library either, or when it is over one of the
    `limits`.

    When the runtimes' reader refuses the file, the program an XML library reads is checked instead (so
    the user still learns what else is wrong), with the reader's refusal as a finding."""
    limits = limits or Limits()
    if len(data) > limits.max_bytes:
        raise InputError(path, limits.exceeded("--max-bytes", f"{len(data)} bytes", limits.max_bytes))
    if not data.strip():
        raise InputError(path, "empty file: an MSCCL program needs an <algo> element (the legacy runtime "
                               "crashes on it, the executor refuses it)")
    element_limit = limits.max_steps + limits.max_tbs + limits.max_ranks + 1024
    doc = read_document(data, element_limit)
    if doc.error is not None and doc.error.kind == "limit":
        raise InputError(path, limits.exceeded("--max-steps", f"more than {element_limit} elements",
                                               element_limit), doc.error.line)
    wellformed = _xml_problem(data)
    if doc.error is None and doc.algos:
        findings, program = _from_document(doc, path, limits)
        if wellformed is not None:
            message, line = wellformed
            findings.insert(0, Finding("not-well-formed", f"the file is not well-formed XML ({message}); the "
                                       "runtimes load it as checked here, other tools may read it differently "
                                       "or not at all", where={"line": line}, severity="warning"))
        _check_pieces(program, limits, path)
        return ReadResult(program, findings, len(data))
    # the runtimes' reader loads no program: say why, and check what an XML library reads
    if doc.error is not None:
        e = doc.error
        what = "crashes the runtimes' reader (SIGSEGV)" if e.kind == "crashed" else "the runtimes' readers refuse it"
        refusal = Finding("parse-rule", f"{e.message}: {what}", where={"line": e.line}, rejects=BOTH)
    else:
        refusal = Finding("parse-rule", "the runtimes' readers find no <algo> element at the top (unknown or "
                          "misplaced elements are skipped with their contents) and crash (NULL algo node)",
                          where={"line": 1}, rejects=BOTH)
    if wellformed is not None:
        message, line = wellformed
        raise InputError(path, f"not well-formed XML ({message}), and {refusal.message}", line)
    builder = _parse(data, path, limits)
    findings = [refusal, *builder.findings]
    program = _program(builder.algo, builder.gpus)
    _check_pieces(program, limits, path)
    return ReadResult(program, findings, len(data))


def _check_pieces(p: Program, limits: Limits, path: str) -> None:
    """`cnt` multiplies the work of every simulation (one piece per chunk): bound the sum."""
    pieces = 0
    for g in p.gpus:
        for tb in g.tbs:
            for op in tb.steps:
                if op.cnt is not None and op.cnt > 0:
                    pieces += min(op.cnt, 71)
    if pieces > limits.max_pieces:
        raise InputError(path, limits.exceeded("--max-pieces", f"the steps move {pieces} chunk pieces in all (sum of "
                                               "cnt)", limits.max_pieces), p.line)


def _program(a: dict[str, Any] | None, raw_gpus: list[dict[str, Any]]) -> Program:
    assert a is not None
    gpus = []
    for g in raw_gpus:
        tbs = []
        for t in g["tbs"]:
            ops = [Op(_int(s, "s"), _str(s, "type"), _str(s, "srcbuf"), _int(s, "srcoff"), _str(s, "dstbuf"),
                      _int(s, "dstoff"), _int(s, "cnt"), _int(s, "depid"), _int(s, "deps"), _int(s, "hasdep"),
                      s["line"]) for s in t["steps"]]
            tbs.append(ThreadBlock(_int(t, "id"), _int(t, "send"), _int(t, "recv"), _int(t, "chan"), ops,
                                   t["line"]))
        gpus.append(Gpu(_int(g, "id"), _int(g, "i_chunks"), _int(g, "o_chunks"), _int(g, "s_chunks"), tbs,
                        g["line"], g["copies"]))
    return Program(
        _str(a, "name"), _str(a, "proto"), _int(a, "nchannels"), _int(a, "nchunksperloop"), _int(a, "ngpus"),
        _str(a, "coll"), _int(a, "inplace"), _int(a, "outofplace"), _int(a, "minBytes"), _int(a, "maxBytes"),
        _int(a, "nthreads"), _str(a, "redop"), gpus, a["line"], a["_names"])


def _xml_problem(data: bytes) -> tuple[str, int] | None:
    """Why an XML library cannot read the file (message, line), or None. expat runs with no handlers but
    the ones that refuse DTDs and entity declarations, so this costs little and expands nothing."""
    parser = xml.parsers.expat.ParserCreate()

    def refuse(*_: object) -> None:
        raise _Stop("a DTD or entity declaration (refused, never expanded)", parser.CurrentLineNumber)

    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as e:
        return xml.parsers.expat.errors.messages[e.code] if e.code else str(e), e.lineno
    except _Stop as e:
        return e.message, e.line or 0
    return None


_KNOWN_PATH = {"algo": "", "gpu": "algo", "tb": "gpu", "step": "tb"}


def _from_document(doc: Document, path: str, limits: Limits) -> tuple[list[Finding], Program]:
    """The program the runtimes load, from the reader's elements, with what the reader met on the way."""
    builder = _Builder(limits)
    findings = builder.findings
    algo = doc.algos[0]
    if len(doc.algos) > 1:
        findings.append(Finding("duplicate-algo", f"{len(doc.algos)} <algo> elements: the runtimes read all of them "
                                f"and use the first (line {algo.line}); the others are ignored",
                                where={"line": doc.algos[1].line}, severity="warning"))
    a = builder.element("algo", algo, {})
    _check_algo_limits(a, limits, path)
    raw_gpus: list[dict[str, Any]] = []
    skipped = list(doc.skipped)
    for gpu, load in doc.gpus:
        builder._count("gpu", gpu.line)
        g = builder.element("gpu", gpu, {})
        g["tbs"], g["copies"] = [], 0
        raw_gpus.append(g)
        if gpu.get("id") is None:
            findings.append(Finding("parse-rule", f"<gpu> (line {gpu.line}) has no id: every rank's reader stops "
                                    "there (Attribute id of node gpu not found)", where={"line": gpu.line},
                                    rejects=BOTH))
        for tb in load.tbs:
            builder._count("tb", tb.line)
            t = builder.element("tb", tb, {"gpu": g.get("id")})
            t["steps"] = []
            for step in tb.children:
                builder._count("step", step.line)
                t["steps"].append(builder.element("step", step, {"gpu": g.get("id"), "tb": t.get("id")}))
            g["tbs"].append(t)
        for name, parent, line in load.skipped:
            skipped.append((name, parent, line))
            if name == "copy" and parent == "gpu":
                g["copies"] += 1
        if load.error is not None:
            e = load.error
            what = "crashes the runtime's reader (SIGSEGV)" if e.kind == "crashed" else "the reader refuses it"
            findings.append(Finding("parse-rule", f"{e.message}: {what} on rank {g.get('id')}",
                                    where={"gpu": g.get("id"), "line": e.line}, rejects=BOTH))
    findings += _skipped_findings(skipped)
    findings += _meta_findings(doc, algo)
    return findings, _program(a, raw_gpus)


def _check_algo_limits(a: dict[str, Any], limits: Limits, path: str) -> None:
    ngpus, chunks = a.get("ngpus"), a.get("nchunksperloop")
    if isinstance(ngpus, int) and ngpus > limits.max_ranks:
        raise InputError(path, limits.exceeded("--max-ranks", f"ngpus={ngpus}", limits.max_ranks), a["line"])
    if isinstance(ngpus, int) and isinstance(chunks, int) and ngpus > 0 and chunks > 0 and \
            ngpus * chunks > limits.max_chunks:
        raise InputError(path, limits.exceeded("--max-chunks", f"ngpus={ngpus} x nchunksperloop={chunks} = "
                                               f"{ngpus * chunks} chunks per buffer", limits.max_chunks), a["line"])


def _skipped_findings(skipped: list[tuple[str, str, int]]) -> list[Finding]:
    out: list[Finding] = []
    seen: dict[tuple[str, str], int] = {}
    for name, parent, line in skipped:
        key = (name, parent)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            continue
        inside = f" inside <{parent}>" if parent else " at the top"
        shown = name[:40] if name else "(empty name)"
        if name in _KNOWN_PATH:
            out.append(Finding("ignored-element", f"<{shown}>{inside} (line {line}) is misplaced (a <{name}> belongs "
                               f"in <{_KNOWN_PATH[name]}>): the runtimes skip it with everything it contains",
                               where={"line": line}, severity="warning"))
        else:
            out.append(Finding("ignored-element", f"<{shown}>{inside} is not part of the format; the runtimes skip "
                               "it with everything it contains", where={"line": line}, severity="info"))
    return out


def _meta_findings(doc: Document, algo: Element) -> list[Finding]:
    """The executor first reads only the first element of the file (its algorithm folder scan): when that is
    not the `<algo>` element, its attributes decide."""
    first = doc.first
    if first is None or (first.name == "algo" and first.line == algo.line):
        return []
    names = {k for k, _ in first.attributes}
    missing = [n for n in EXEC_META_REQUIRED if n not in names]
    if missing:
        why = f"Attribute {missing[0]} of node {first.name[:40]} not found"
    else:
        coll = next(v for k, v in first.attributes if k == "coll")
        if coll in EXEC_META_COLLS:
            return []
        why = f"unknown coll {coll[:40]!r}"
    return [Finding("parse-rule", f"the executor reads the first element of the file (<{first.name[:40]}>, line "
                    f"{first.line}) for its metadata and refuses it: {why}", where={"line": first.line},
                    rejects=frozenset({"executor"}))]


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
