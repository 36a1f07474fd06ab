"""MSCCL XML programs as an input format (`smtcoll.formats.registry`): read by `smtcoll.msccl.reader`, byte
for byte as the runtimes' readers do, under the reading limits; the checker judges the `Program`."""

from __future__ import annotations

import re

from smtcoll.formats.source import Source, xml_root
from smtcoll.model import Topology
from smtcoll.msccl.reader import ReadResult, read_program_bytes

NAME = "msccl-xml"
_ALGO_ROOT = re.compile(r"\s*<algo[\s/>]")
SUFFIXES: tuple[str, ...] = (".xml",)
ERRORS: tuple[type[Exception], ...] = ()  # the reader raises InputError itself


def detect(source: Source) -> bool:
    return source.head.startswith("<")  # after ForestColl's row, which is XML too


def claims(source: Source) -> bool:
    """A `.xml` file whose root element is `<algo>`, or with no markup at all (empty, plain text: a broken
    algorithm file, reported unusable); other XML documents (`pom.xml`) are not algorithm files."""
    if source.suffix != ".xml":
        return False
    text = source.sniff().lstrip()
    return not text.startswith("<") or _ALGO_ROOT.match(xml_root(text)) is not None


def read(source: Source, topology: Topology | None) -> ReadResult:
    return read_program_bytes(source.data, source.name, source.limits)
