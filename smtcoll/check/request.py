"""What a check is asked: one frozen, validated value that the CLI (`smtcoll verify`), the API
(`smtcoll.verify`), `check_file` and the process pool of `check_files` all build and hand to the one front
door, `smtcoll.check.door.check`. Options travel as this value, never as loose parameters."""

from __future__ import annotations

from typing import Any

import attrs

from smtcoll.choices import checked_runtime
from smtcoll.errors import UsageError
from smtcoll.formats import registry
from smtcoll.model import Topology
from smtcoll.model.timed import BoundFn
from smtcoll.msccl.reader import Limits


def _limits(value: Limits | int | None) -> Limits:
    """A `Limits`, or only a size limit in bytes (`None`: the defaults)."""
    if isinstance(value, Limits):
        return value
    return Limits() if value is None else Limits(max_bytes=value)


def _runtime(value: object) -> str:
    """The checker's spelling of a `--runtime` choice (smtcoll.choices): any, both, executor or legacy."""
    return checked_runtime(value, "runtime")


def _format(_: Any, a: attrs.Attribute[Any], value: str) -> None:
    if value != "auto" and value not in [f.NAME for f in registry.FORMATS]:
        raise UsageError(a.name, f"{value!r}: expected auto, {', '.join(f.NAME for f in registry.FORMATS)}")


def _at_least(low: int) -> Any:
    def check(_: Any, a: attrs.Attribute[Any], value: int | None) -> None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
            raise UsageError(a.name, f"{value!r}: expected an integer >= {low}")
    return check


@attrs.frozen
class CheckRequest:
    """One check. `runtime`: which runtimes must accept an XML program (`any`/`auto`: at least one,
    `both`, `executor`, `legacy`; smtcoll.choices);
    `collective`: a built-in name or a `.toml` spec that replaces the program's `coll`, with `root` and
    `chunks` (chunks per input of the spec); `topology`: XML connections are mapped to its links and timed,
    schedules are checked on it; `limits` (or only a size limit in bytes) bound what is read; `strict`:
    dead-data findings become errors; `input_format`: `auto` (by content) or a format name
    (docs/formats.md); `bound`: the lower bound shown next to the times (the checker never imports the
    bounds, so the caller passes it in)."""

    runtime: str = attrs.field(default="any", converter=_runtime)
    collective: str | None = None
    root: int | None = attrs.field(default=None, validator=_at_least(0))
    topology: Topology | None = None
    limits: Limits = attrs.field(factory=Limits, converter=_limits)
    chunks: int | None = attrs.field(default=None, validator=_at_least(1))
    strict: bool = False
    input_format: str = attrs.field(default="auto", validator=_format)
    bound: BoundFn | None = None
