"""Lowering options and the runtimes a file is written for: what the user may ask, checked before any work."""

from __future__ import annotations

import attrs

from smtcoll import collectives
from smtcoll.choices import RUNTIME_ALIASES, RUNTIMES
from smtcoll.errors import SmtcollError
from smtcoll.msccl.runtime import MAX_CHANNELS, PROTOCOLS

MODES = ("outofplace", "inplace", "both")
RUNTIME_CHOICES = RUNTIMES
COPIES_PER_TB = 16  # local copies per thread block: they run in parallel and stay within MAX_STEPS
# coll spelling per runtime (executor, legacy), from the table of collectives; None: that runtime has no such
# collective. `custom` is the legacy runtime's name for any other collective.
SPELLING: dict[str, tuple[str | None, str | None]] = {k.name: (k.executor, k.legacy) for k in collectives.TABLE}
SPELLING["custom"] = (None, "custom")


class RejectedSchedule(SmtcollError):
    """The schedule checker rejects the schedule: lowering it would only produce a wrong program."""

    exit_code = 1


class CannotLower(SmtcollError):
    """The runtime cannot express this schedule (or these options)."""


@attrs.frozen
class LowerOptions:
    instances: int = 1
    protocol: str = "Simple"
    runtime: str = "auto"  # auto: a file both runtimes accept when the collective allows, else the one that can
    mode: str = "outofplace"
    min_bytes: int | None = None
    max_bytes: int | None = None
    fuse: bool = True
    name: str | None = None


def runtimes_for(kind: str, runtime: str) -> tuple[str, ...]:
    executor, legacy = SPELLING[kind]
    runtime = RUNTIME_ALIASES.get(runtime, runtime)
    if runtime == "executor" and not executor:
        raise CannotLower(f"msccl-executor-nccl has no {kind!r} collective; use --runtime legacy")
    if runtime == "legacy" and not legacy:
        raise CannotLower(f"the legacy msccl runtime has no {kind} collective; use --runtime executor")
    if runtime == "both":
        if not executor or not legacy:
            raise CannotLower(f"no single file serves both runtimes for {kind}: only the "
                              f"{'executor' if executor else 'legacy'} runtime has it")
        if executor != legacy:
            raise CannotLower(f"no single file serves both runtimes for {kind}: the executor spells it "
                              f"{executor!r}, the legacy runtime {legacy!r} (write one file per runtime)")
        return ("executor", "legacy")
    if runtime == "auto":
        if executor and executor == legacy:
            return ("executor", "legacy")
        return ("executor",) if executor else ("legacy",)
    if runtime not in ("executor", "legacy"):
        raise CannotLower(f"unknown runtime {runtime!r} (choose from {', '.join(RUNTIME_CHOICES)})")
    return (runtime,)


def check_options(o: LowerOptions) -> None:
    if not isinstance(o.instances, int) or not 1 <= o.instances <= MAX_CHANNELS:
        raise CannotLower(f"--instances must be between 1 and {MAX_CHANNELS}, got {o.instances}")
    if o.protocol not in PROTOCOLS:
        raise CannotLower(f"unknown protocol {o.protocol!r} (choose from {', '.join(PROTOCOLS)})")
    if o.mode not in MODES:
        raise CannotLower(f"unknown mode {o.mode!r} (choose from {', '.join(MODES)})")
    for name, v in (("--min-buffer-bytes", o.min_bytes), ("--max-buffer-bytes", o.max_bytes)):
        if v is not None and not 0 <= v < 1 << 63:
            raise CannotLower(f"{name} must be between 0 and 2^63-1, got {v}")
    if o.min_bytes is not None and o.max_bytes and o.max_bytes < o.min_bytes:
        raise CannotLower(f"--max-buffer-bytes {o.max_bytes} is below --min-buffer-bytes {o.min_bytes}: never selected")
