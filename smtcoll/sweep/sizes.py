"""Buffer sizes on the command line (`1KiB:4GiB`) and the ranges an algorithm file is selected for.

A size is the runtime's `nBytes`: the bytes of the call's largest per-rank buffer (msccl-executor-nccl
computes `count * typeSize * sizeMultiplier`: the whole output of an Allgather, the whole input of a
ReduceScatter, the buffer of an Allreduce or Alltoall).
"""

from __future__ import annotations

import re

import attrs

from smtcoll.errors import ModelError

UNITS = {"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
         "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_SIZE = re.compile(r"\s*(\d+)\s*([A-Za-z]*)\s*")
MAX_SIZE = (1 << 63) - 1


def parse_size(text: str, where: str = "--sizes") -> int:
    """`4GiB` -> 4294967296; binary (KiB) and decimal (KB) units, plain numbers are bytes."""
    m = _SIZE.fullmatch(text)
    if not m or m.group(2) not in UNITS:
        raise ModelError(where, f"{text!r} is not a size (a whole number with an optional unit: "
                                f"{', '.join(u for u in UNITS if u)})")
    value = int(m.group(1)) * UNITS[m.group(2)]
    if value > MAX_SIZE:
        raise ModelError(where, f"{text!r} is larger than 2^63-1 bytes")
    return value


@attrs.frozen
class SizeRange:
    """Every buffer size from `low` to `high` bytes, both included."""

    low: int
    high: int

    def __attrs_post_init__(self) -> None:
        if not 1 <= self.low <= self.high:
            raise ModelError("--sizes", f"the range {self.low}:{self.high} is empty or starts at 0 bytes "
                                        "(a runtime never selects an algorithm for an empty call)")

    def samples(self) -> list[int]:
        """The range's ends and every power of two between them: where predictions are reported."""
        out = {self.low, self.high}
        p = 1
        while p <= self.high:
            if p >= self.low:
                out.add(p)
            p <<= 1
        return sorted(out)

    def text(self) -> str:
        return f"{human(self.low)}..{human(self.high)}"


def parse_range(text: str) -> SizeRange:
    """`1KiB:4GiB` (both ends included) or a single size."""
    low, sep, high = text.partition(":")
    lo = parse_size(low)
    hi = parse_size(high) if sep else lo
    if hi < lo:
        raise ModelError("--sizes", f"{text!r}: the upper end is below the lower end")
    return SizeRange(lo, hi)


def human(n: int) -> str:
    """Exact binary units where they are exact (65536 -> 64KiB), else bytes."""
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        if n and n % UNITS[unit] == 0:
            return f"{n // UNITS[unit]}{unit}"
    return f"{n}B"


def file_bounds(r: SizeRange, runtime: str) -> tuple[int, int]:
    """`minBytes`, `maxBytes` selecting exactly the sizes of `r`: the executor includes `maxBytes`
    (`nBytes <= max`), the legacy runtime excludes it (`nBytes < max`)."""
    return (r.low, r.high) if runtime == "executor" else (r.low, r.high + 1)
