"""The runtimes' own XML reader, byte for byte: what MSCCL loads from a file, rank by rank.

Neither runtime uses an XML library. Both (the executor's `msccl_parser.cc` and the legacy runtime's
`xml.cc`, which share NCCL's topology-file reader) read a file node by node with a few hand-written rules,
so they load programs that an XML library reads differently, and some that it cannot read at all:

* A value is the raw bytes up to the next `"` (it may open with `'`); no reference is decoded
  (`&#49;` reaches `strtol` as `&#49;`).
* A name (element or attribute) runs to the first space, `>`, `/`, CR or LF; an attribute without `=` is
  an attribute with an empty value, so a double space adds an empty-named attribute, and a second
  occurrence of an attribute is ignored (lookups take the first). At most 16 attributes are kept.
* A closing tag must end right after its name (`</tb >` is refused).
* Elements are loaded by path: `<algo>` at the top, `<gpu>` in `<algo>`, `<tb>` in the `<gpu>` of the rank
  being loaded, `<step>` in `<tb>`. Anything else is skipped with its subtree; a skipped subtree ends at
  the first closing tag at its depth whatever its name. A child element of a loaded `<step>` crashes the
  reader (its children are read with a NULL handler table).

This module reproduces those rules, so the checker judges the program the runtimes run. Hand-written
because no XML library reads these non-XML rules; the XML library (expat) is still used, by the caller,
to say whether the file is well-formed XML.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from smtcoll.msccl.runtime import (
    MAX_STR_LEN as MAX_NAME,  # a name stops at 254 characters with its terminator
)

MAX_ATTRS = 16  # MAX_ATTR_COUNT: further attributes are read and dropped

OPEN, CLOSE, SINGLE = 0, 1, 2


class ReaderError(Exception):
    """The reader stops: `kind` is `refused` (the runtime returns an error) or `crashed` (SIGSEGV)."""

    def __init__(self, message: str, line: int, kind: str = "refused") -> None:
        super().__init__(message)
        self.message, self.line, self.kind = message, line, kind


@attrs.frozen
class Node:
    kind: int
    name: str
    attributes: tuple[tuple[str, str], ...]  # the kept ones (first 16), raw
    line: int
    dropped: int = 0  # attributes past the 16th


@attrs.frozen
class Element:
    """A loaded element: attributes looked up like the runtimes (first occurrence wins)."""

    name: str
    attributes: tuple[tuple[str, str], ...]
    line: int
    children: tuple[Element | Node, ...] = ()
    dropped: int = 0

    def get(self, key: str) -> str | None:
        for k, v in self.attributes:
            if k == key:
                return v
        return None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(k for k, _ in self.attributes)


@attrs.frozen
class RankLoad:
    """What the reader loaded for one `<gpu>` element in the parse of its own rank, or why it failed."""

    tbs: tuple[Element, ...]
    error: ReaderError | None = None
    skipped: tuple[tuple[str, str, int], ...] = ()  # (element, parent, line)


@attrs.frozen
class Document:
    """The result of a reader pass: the first node (the executor's meta stage), the `<algo>` elements, and
    per `<gpu>` element what its rank loads. `error` is a failure every rank meets."""

    first: Node | None
    algos: tuple[Element, ...]
    gpus: tuple[tuple[Element, RankLoad], ...]  # gpus of the first <algo>, in document order
    error: ReaderError | None
    skipped: tuple[tuple[str, str, int], ...]  # (element, parent, line) skipped by every rank
    other_gpus: int = 0  # <gpu> elements of later <algo> elements (they count against MAX_NODES)


# ---------------------------------------------------------------------------------------------------
# nodes
# The text is the file's bytes decoded as UTF-8 with undecodable bytes kept as surrogates, so that every
# rule below, written on characters, reads the bytes the runtimes read (all their delimiters are ASCII).
_WS = re.compile(r"[ \n\r]*")
_TOKEN = re.compile(r"[^ >/\n\r=]*")
_FAST_OPEN = re.compile(r'<([A-Za-z_][^ >/\n\r="\'!]{0,252})((?: [^ >/\n\r="\'][^ >/\n\r=]{0,253}="[^"]*")*)(/?)>')
_FAST_ATTR = re.compile(r' ([^=]*)="([^"]*)"')
_FAST_CLOSE = re.compile(r"</([^ >/\n\r=]{1,253})>")


def _char(ch: str) -> str:
    """The character as the runtimes print it (`%c` of one byte: the first byte of a non-ASCII one)."""
    c = ch.encode("utf-8", errors="surrogateescape")[0]
    return {10: "\\n", 13: "\\r", 9: "\\t"}.get(c, chr(c) if 32 <= c < 127 else f"\\x{c:02x}")


_SHARED = 1 << 16  # distinct names and (name, value) pairs shared between nodes, at most


class _Lexer:
    def __init__(self, data: bytes) -> None:
        self.data = data.decode("utf-8", errors="surrogateescape")
        self.n = len(self.data)
        self.pos = 0
        self.line = 1
        self.counted = 0  # newlines counted up to this position
        # one object per distinct name and attribute: a program's millions of steps repeat a few thousand
        # (name, value) pairs, and a node holding its own copies cost 2 KB per step
        self.shared: dict[object, object] = {}

    def share(self, item: Any) -> Any:
        shared = self.shared
        if len(shared) < _SHARED:
            return shared.setdefault(item, item)
        return shared.get(item, item)

    def _line_at(self, pos: int) -> int:
        if pos > self.counted:
            self.line += self.data.count("\n", self.counted, pos)
            self.counted = pos
        return self.line

    def fail(self, message: str, pos: int) -> ReaderError:
        return ReaderError(message, self._line_at(min(pos, self.n)))

    def token(self, pos: int, value_allowed: bool) -> tuple[str, str | None, str, int]:
        """GetToken: a name up to a terminator, or `name=` and a value. Returns name, value, last char, pos."""
        data = self.data
        m = _TOKEN.match(data, pos, min(self.n, pos + MAX_NAME))
        assert m is not None
        name = m.group()
        end = m.end()
        if len(name) >= MAX_NAME:
            raise self.fail(f"name {(name[:40])}... too long (max {MAX_NAME})", pos)
        if end >= self.n:
            raise self.fail("unexpected end of file inside a tag", end)
        c = data[end]
        if c == "=":
            if not value_allowed:
                raise self.fail(f"unexpected value with name {(name)!r}", end)
            v = end + 1
            if v >= self.n:
                raise self.fail("unexpected end of file inside a tag", v)
            if data[v] not in "\"'":
                raise self.fail("expected (double) quote", v)
            q = data.find('"', v + 1)
            if q < 0 or q + 1 >= self.n:
                raise self.fail("unexpected end of file inside a value", self.n)
            return name, data[v + 1:q], data[q + 1], q + 2
        if len(name) == MAX_NAME - 1:
            raise self.fail(f"name {(name[:40])}... too long (max {MAX_NAME})", pos)
        return name, None, c, end + 1

    def node(self) -> Node | None:
        """GetNode: the next node, None at the end of the file; comments are skipped."""
        data = self.data
        while True:
            pos = _WS.match(data, self.pos).end()  # type: ignore[union-attr]
            self.pos = pos
            if pos >= self.n:
                return None
            line = self._line_at(pos)
            if data[pos] != "<":
                raise self.fail(f"expecting '<', got '{_char(data[pos])}'", pos)
            m = _FAST_OPEN.match(data, pos)
            if m is not None:
                found = _FAST_ATTR.findall(m.group(2))
                self.pos = m.end()
                share = self.share
                return Node(SINGLE if m.group(3) else OPEN, share(m.group(1)), tuple(map(share, found[:MAX_ATTRS])),
                            line, max(0, len(found) - MAX_ATTRS))
            m = _FAST_CLOSE.match(data, pos)
            if m is not None:
                self.pos = m.end()
                return Node(CLOSE, self.share(m.group(1)), (), line)
            name, _, c, pos = self.token(pos + 1, False)
            if name.startswith("!--"):
                self.pos = self._skip_comment(name[3:] + c, pos)
                continue
            if not name and c == "/":  # '</'

                name, _, c, pos = self.token(pos, False)
                if c != ">":
                    raise self.fail(f"unexpected trailing '{_char(c)}' in closing tag {(name)}", pos - 1)
                self.pos = pos
                return Node(CLOSE, (name), (), line)
            found = []
            while c == " ":
                key, value, c, pos = self.token(pos, True)
                found.append((key, value or ""))
            kind = OPEN
            if c == "/":
                kind = SINGLE
                _, _, c, pos = self.token(pos, False)
            if c != ">":
                raise self.fail(f"expected '>', got '{_char(c)}'", pos - 1)
            self.pos = pos
            return Node(kind, (name), tuple(found[:MAX_ATTRS]), line, max(0, len(found) - MAX_ATTRS))

    def _skip_comment(self, read: str, pos: int) -> int:
        """The reader looks for `-->` in a window of the last three characters, starting with those it read
        as the comment's name."""
        window = ("..." + read)[-3:]
        if window == "-->":
            return pos
        for k in (1, 2):
            if window[k:] + self.data[pos:pos + k] == "-->":
                return pos + k
        end = self.data.find("-->", pos)
        if end < 0:
            raise self.fail("unterminated comment", self.n)
        return end + 3


# ---------------------------------------------------------------------------------------------------
# elements by path
class _Nodes:
    def __init__(self, data: bytes, max_nodes: int) -> None:
        self.lexer = _Lexer(data)
        self.items: list[Node | None] = []
        self.error: ReaderError | None = None
        lex = self.lexer
        opened = 0
        try:
            while True:
                node = lex.node()
                if node is None:
                    break
                self.items.append(node)
                if node.kind != CLOSE:
                    opened += 1
                    if opened > max_nodes:
                        raise ReaderError(f"more than {max_nodes} elements", node.line, "limit")
        except ReaderError as e:
            self.error = e
        self.end_line = lex._line_at(lex.n)

    def at(self, i: int) -> Node | None:
        """Node i, None at the end; raises the lexical error where the reader meets it."""
        if i < len(self.items):
            return self.items[i]
        if self.error is not None:
            raise self.error
        return None


def _skip(nodes: _Nodes, i: int, head: Node) -> int:
    """Skip the subtree of `head` (node i-1): closing tags close whatever their name. Returns the index
    after it."""
    if head.kind == SINGLE:
        return i
    depth = 1
    while True:
        n = nodes.at(i)
        i += 1
        if n is None:
            raise ReaderError(f"unterminated element (<{head.name}> skipped from line {head.line})", nodes.end_line)
        if n.kind == CLOSE:
            depth -= 1
            if depth == 0:
                return i
        elif n.kind == OPEN:
            depth += 1


def _close(head: Node, n: Node | None, nodes: _Nodes) -> None:
    if n is None:
        raise ReaderError(f"unterminated <{head.name}> (line {head.line})", nodes.end_line)
    if n.name != head.name:
        raise ReaderError(f"XML mismatch: <{head.name}> (line {head.line}) closed by </{n.name}>", n.line)


def _element(n: Node, children: tuple[Element | Node, ...] = ()) -> Element:
    return Element(n.name, n.attributes, n.line, children, n.dropped)


def _load_gpu(nodes: _Nodes, i: int, gpu: Node) -> tuple[RankLoad, int]:
    """The `<gpu>` subtree as its own rank loads it: `<tb>` and their `<step>` kept, anything else skipped."""
    tbs: list[Element] = []
    skipped: list[tuple[str, str, int]] = []
    try:
        if gpu.kind != SINGLE:
            while True:
                n = nodes.at(i)
                i += 1
                if n is None or n.kind == CLOSE:
                    _close(gpu, n, nodes)
                    break
                if n.name != "tb":
                    skipped.append((n.name, "gpu", n.line))
                    i = _skip(nodes, i, n)
                    continue
                steps: list[Element | Node] = []
                if n.kind != SINGLE:
                    while True:
                        s = nodes.at(i)
                        i += 1
                        if s is None or s.kind == CLOSE:
                            _close(n, s, nodes)
                            break
                        if s.name != "step":
                            skipped.append((s.name, "tb", s.line))
                            i = _skip(nodes, i, s)
                            continue
                        steps.append(s)  # a step's attributes and line are all the parser uses
                        if s.kind != SINGLE:
                            c = nodes.at(i)
                            i += 1
                            if c is not None and c.kind != CLOSE:
                                raise ReaderError(
                                    f"<{c.name}> inside <step> (line {s.line}): the reader loads a step's children "
                                    "with a NULL handler table and crashes (SIGSEGV) on the rank that owns it",
                                    c.line, "crashed")
                            _close(s, c, nodes)
                tbs.append(_element(n, tuple(steps)))
    except ReaderError as e:
        return RankLoad(tuple(tbs), e, tuple(skipped)), -1
    return RankLoad(tuple(tbs), None, tuple(skipped)), i


def read_document(data: bytes, max_nodes: int = 1 << 21) -> Document:
    """Run the runtimes' reader over `data`: every rank reads every byte, so a lexical error is met by
    every rank; a `<gpu>` subtree is loaded only by its own rank and skipped by the others."""
    nodes = _Nodes(data, max_nodes)
    if nodes.error is not None and nodes.error.kind == "limit":
        return Document(None, (), (), nodes.error, ())
    first = nodes.items[0] if nodes.items else None
    algos: list[Element] = []
    gpus: list[tuple[Element, RankLoad]] = []
    skipped: list[tuple[str, str, int]] = []
    other_gpus = 0
    i = 0
    try:
        while True:
            n = nodes.at(i)
            i += 1
            if n is None:
                break
            if n.name != "algo":  # at the top a closing tag is an element like any other
                skipped.append((n.name, "", n.line))
                i = _skip(nodes, i, n)
                continue
            algo = _element(n)
            if n.kind != SINGLE:
                while True:
                    g = nodes.at(i)
                    i += 1
                    if g is None or g.kind == CLOSE:
                        _close(n, g, nodes)
                        break
                    if g.name != "gpu":
                        skipped.append((g.name, "algo", g.line))
                        i = _skip(nodes, i, g)
                        continue
                    start = i
                    end = _skip(nodes, start, g)  # what every other rank does
                    if algos:
                        other_gpus += 1
                        i = end
                        continue
                    load, _ = _load_gpu(nodes, start, g)
                    gpus.append((_element(g), load))
                    i = end
            algos.append(algo)
    except ReaderError as e:
        return Document(first, tuple(algos), tuple(gpus), e, tuple(skipped), other_gpus)
    return Document(first, tuple(algos), tuple(gpus), None, tuple(skipped), other_gpus)
