"""Which format a file is in (by content, or as the user says), and reading it into a schedule.

Step schedules (`Schedule`: smtcoll's JSON, SCCL `*.msccl.json`, SCCL-style algorithms with a `links`
matrix) and timed schedules (`TimedSchedule`: TE-CCL flow JSON, TACCL algorithm JSON, the transfer log,
ForestColl trees). MSCCL XML programs are read by `smtcoll.msccl.reader`, not here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from smtcoll.errors import InputError, ModelError
from smtcoll.formats import forestcoll, schedules, taccl, teccl, transfers
from smtcoll.formats.numbers import loads_json
from smtcoll.model import Schedule, Topology
from smtcoll.model.timed import TimedSchedule

INPUT_FORMATS = ("auto", "msccl-xml", "schedule-json", "teccl-json", "taccl-json", "transfers-json",
                 "transfers-csv", "forestcoll-xml")


def read_text(path: str, limit: int | None = None) -> str:
    """The file's text, refused above `limit` bytes (default MAX_SCHEDULE_BYTES; `smtcoll verify
    --max-bytes` passes its own, so the option its message names is the one that lifts it)."""
    p = Path(path)
    limit = schedules.MAX_SCHEDULE_BYTES if limit is None else limit
    try:
        size = p.stat().st_size
        if size > limit:
            raise InputError(path, f"file is {size} bytes: over the limit of {limit}; if the file is genuine, "
                                   "raise it (smtcoll verify --max-bytes N)")
        return p.read_bytes().decode("utf-8-sig")
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise InputError(path, f"not UTF-8 text (byte {e.start})") from None


def detect(path: str, text: str | None = None) -> str:
    """The format of a file by its content; the suffix only decides between XML and JSON when the content
    does not (an unreadable file is reported by the reader of that format)."""
    if text is None:
        try:
            with open(path, "rb") as f:
                text = f.read(4096).decode("utf-8-sig", errors="replace")
        except OSError:
            return "msccl-xml" if path.endswith(".xml") else "schedule-json"
    head = text.lstrip()
    if head.startswith("<"):
        return "forestcoll-xml" if forestcoll.is_forestcoll(_skip_prolog(head)) else "msccl-xml"
    if transfers.is_transfer_log_csv(text):
        return "transfers-csv"
    if head.startswith("{"):
        keys = head[:4096]
        if '"1-Epoch_Duration"' in keys or '"7-Flows"' in keys or '"6-Flows"' in keys:
            return "teccl-json"
        if '"smtcoll.transfers"' in keys:
            return "transfers-json"
        return "json"  # decided on the parsed object: TACCL's topology may come after 4 KB
    if path.endswith(".csv"):
        return "transfers-csv"
    return "msccl-xml" if path.endswith(".xml") else "schedule-json"


def _skip_prolog(text: str) -> str:
    while text.startswith("<?") or text.startswith("<!--"):
        end = text.find("?>" if text.startswith("<?") else "-->")
        if end < 0:
            return text
        text = text[end + (2 if text.startswith("<?") else 3):].lstrip()
    return text


def _json(text: str, name: str) -> Any:
    return loads_json(text, name)


def read_input(path: str, fmt: str = "auto", topology: Topology | None = None,
               max_bytes: int | None = None) -> tuple[str, Schedule | TimedSchedule]:
    """(format, schedule) of a file that is not MSCCL XML; errors name the file and the place.
    `max_bytes`: the size limit (default MAX_SCHEDULE_BYTES)."""
    text = read_text(path, max_bytes)
    if fmt == "auto":
        fmt = detect(path, text)
    try:
        if fmt == "transfers-csv":
            return fmt, attrs.evolve(transfers.read_transfer_log(transfers.parse_csv(text), topology, path),
                                     format=fmt)
        if fmt == "forestcoll-xml":
            return fmt, forestcoll.read_forestcoll(text, topology, path)
        if fmt == "msccl-xml":
            raise InputError(path, "an MSCCL XML program, not a schedule")
        data = _json(text, path)
        if fmt == "json":
            fmt = ("teccl-json" if teccl.is_teccl(data) else "taccl-json" if taccl.is_taccl(data)
                   else "transfers-json" if transfers.is_transfer_log_json(data) else "schedule-json")
        if fmt == "teccl-json":
            if not teccl.is_teccl(data):
                raise InputError(path, "not TE-CCL flow JSON (no 1-Epoch_Duration and flows)")
            return fmt, teccl.read_teccl(data, topology, path)
        if fmt == "taccl-json":
            if not taccl.is_taccl(data):
                raise InputError(path, "not TACCL algorithm JSON (its topology has no copies and node_links)")
            return fmt, taccl.read_taccl(data, schedules.sccl_collective(data), topology, path)
        if fmt == "transfers-json":
            if not isinstance(data, dict):
                raise InputError(path, "expected a JSON object")
            return fmt, attrs.evolve(transfers.read_transfer_log(data, topology, path), format=fmt)
        return "schedule-json", schedules.parse_schedule(text, path)
    except (teccl.TecclError, taccl.TacclError, transfers.LogError, forestcoll.ForestError,
            schedules.Bad) as e:
        raise InputError(path, f"{e.where}: {e.message}" if e.where else e.message) from None
    except ModelError as e:
        raise InputError(path, str(e)) from None
