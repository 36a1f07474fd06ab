"""A file as the input formats see it: its bytes, read once under the size limit, with its text and its
JSON decoded on first use and kept (detection and the reader share them: a file is parsed once)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from smtcoll.errors import InputError
from smtcoll.formats.numbers import loads_json

if TYPE_CHECKING:
    from smtcoll.msccl.reader import Limits

HEAD_BYTES = 4096  # what content detection looks at before it needs the whole file
_UNSET: Any = object()


def _default_limits() -> Limits:
    from smtcoll.msccl.reader import Limits  # here: reading a schedule needs not the XML reader's start-up

    return Limits()


@attrs.define
class Source:
    """`name` names the file in every message (a path, or `<bytes>`); `limits` are the reading limits
    (`smtcoll verify --max-bytes` ...), which the MSCCL XML reader applies to the program too."""

    name: str
    data: bytes
    limits: Limits = attrs.field(factory=_default_limits)
    complete: bool = True  # False: `data` is only the file's first bytes (a directory walk's look at it)
    _text: Any = attrs.field(default=_UNSET, init=False, repr=False)
    _json: Any = attrs.field(default=_UNSET, init=False, repr=False)

    @property
    def head(self) -> str:
        """The first 4 KB as text, leading whitespace dropped (never raises: for detection only)."""
        return self.data[:HEAD_BYTES].decode("utf-8-sig", errors="replace").lstrip()

    def sniff(self) -> str:
        """All the bytes read as text, undecodable bytes replaced (never raises: for a directory walk's
        `claims`, which looks further than `head`: an XML prolog may be long)."""
        return self.data.decode("utf-8-sig", errors="replace")

    @property
    def suffix(self) -> str:
        return os.path.splitext(self.name)[1].lower()

    def text(self) -> str:
        """The text (UTF-8, a byte-order mark dropped); `InputError` when it is not UTF-8."""
        if self._text is _UNSET:
            try:
                self._text = self.data.decode("utf-8-sig")
            except UnicodeDecodeError as e:
                raise InputError(self.name, f"not UTF-8 text (byte {e.start})") from None
        return str(self._text)

    def json(self) -> Any:
        """The parsed JSON; `InputError` with line and column when it is not JSON."""
        if self._json is _UNSET:
            self._json = loads_json(self.text(), self.name)
        return self._json

    def json_or_none(self) -> Any:
        """The parsed JSON, or None when the file is not JSON (for detection, which never raises)."""
        try:
            return self.json()
        except InputError:
            return None


# XML prolog: declaration, processing instructions, comments, DOCTYPE (without an internal subset), space
_PROLOG = re.compile(r"\s*(?:<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^>\[]*>)", re.S)


def xml_root(text: str) -> str:
    """`text` from its root element on: after any XML declaration, comments and DOCTYPE."""
    pos = 0
    while m := _PROLOG.match(text, pos):
        if m.end() == pos:
            break
        pos = m.end()
    return text[pos:]


def json_claim(source: Source, holds: Callable[[dict[str, Any]], bool], marker: re.Pattern[str] | None) -> bool:
    """A JSON format's claim on a file in a directory walk (never raises): the parsed object passes `holds`;
    a file that is not JSON (broken) or only partly read, when its text shows `marker`."""
    if source.suffix != ".json":
        return False
    data = source.json_or_none() if source.complete else None
    if data is not None:
        return isinstance(data, dict) and holds(data)
    return marker is not None and marker.search(source.data.decode("utf-8", errors="replace")) is not None


def size_of(path: str) -> int:
    """The size of a file, 0 when it cannot be stat'ed (reading it then says why)."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def read_source(path: str, limits: Limits | None = None) -> Source:
    """A file's bytes, refused over `limits.max_bytes` before reading (also when it grew since)."""
    limits = limits or _default_limits()
    size = size_of(path)
    if size > limits.max_bytes:
        raise InputError(path, limits.exceeded("--max-bytes", f"file is {size} bytes", limits.max_bytes))
    try:
        with open(path, "rb") as f:
            data = f.read(limits.max_bytes + 1)
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None
    if len(data) > limits.max_bytes:  # grew since the stat, or not a regular file
        raise InputError(path, limits.exceeded("--max-bytes", f"more than {limits.max_bytes} bytes",
                                               limits.max_bytes))
    return Source(path, data, limits)
