"""The transfer log as CSV (docs/formats.md): the `Format` of `smtcoll.formats.registry`; read by
`transfers.parse_csv` into the JSON log's shape, then as the JSON log."""

from __future__ import annotations

import attrs

from smtcoll.formats.source import Source
from smtcoll.formats.transfers import LogError, is_transfer_log_csv, parse_csv, read_transfer_log
from smtcoll.model import Topology
from smtcoll.model.timed import TimedSchedule

NAME = "transfers-csv"
SUFFIXES: tuple[str, ...] = (".csv",)
ERRORS: tuple[type[Exception], ...] = (LogError,)


def detect(source: Source) -> bool:
    head = source.head
    if head.startswith("<") or head.startswith("{"):
        return False
    return is_transfer_log_csv(source.data.decode("utf-8-sig", errors="replace"))


def claims(source: Source) -> bool:
    """A `.csv` file whose header row is the transfer log's (docs/formats.md)."""
    return source.suffix == ".csv" and is_transfer_log_csv(source.sniff())


def read(source: Source, topology: Topology | None) -> TimedSchedule:
    return attrs.evolve(read_transfer_log(parse_csv(source.text()), topology, source.name), format=NAME)
