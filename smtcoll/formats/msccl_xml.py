"""MSCCL XML programs as an input format (`smtcoll.formats.registry`): read by `smtcoll.msccl.reader`, byte
for byte as the runtimes' readers do, under the reading limits; the checker judges the `Program`."""

from __future__ import annotations

from smtcoll.formats.source import Source
from smtcoll.model import Topology
from smtcoll.msccl.reader import ReadResult, read_program_bytes

NAME = "msccl-xml"
SUFFIXES: tuple[str, ...] = (".xml",)
ERRORS: tuple[type[Exception], ...] = ()  # the reader raises InputError itself


def detect(source: Source) -> bool:
    return source.head.startswith("<")  # after ForestColl's row, which is XML too


def read(source: Source, topology: Topology | None) -> ReadResult:
    return read_program_bytes(source.data, source.name, source.limits)
