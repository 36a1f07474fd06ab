"""The fastest candidate for every buffer size: the lower envelope of the candidates' lines over the
requested range, as consecutive size ranges that tile it (no gap, no overlap).

Each candidate's predicted time is a line in the size, so the fastest candidate changes only where two
lines cross, and as the size grows it moves to candidates with ever smaller slopes (latency-optimal first,
bandwidth-optimal last). The envelope is computed exactly (fractions), with ties broken by the candidate's
`rank` (its place in a fixed order) so that the result never depends on the order of evaluation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from smtcoll.sweep.cost import Line
from smtcoll.sweep.sizes import SizeRange


def envelope(lines: Sequence[Line], requested: SizeRange) -> list[tuple[SizeRange, int]]:
    """(range, index into `lines`) in increasing size; the ranges tile `requested`. Among equal times the
    smaller slope wins (it stays best for larger sizes), then the smaller index."""
    if not lines:
        return []

    def best_at(size: int, among: Sequence[int]) -> int:
        return min(among, key=lambda i: (lines[i].at(size), lines[i].slope, i))

    out: list[tuple[SizeRange, int]] = []
    start, cur = requested.low, best_at(requested.low, range(len(lines)))
    while True:
        # the first size above `start` where a flatter line is at least as fast as the current one
        switch: int | None = None
        for i, line in enumerate(lines):
            if line.slope >= lines[cur].slope:
                continue
            cross = (line.fixed - lines[cur].fixed) / (lines[cur].slope - line.slope)
            at = max(start + 1, math.ceil(cross))
            if switch is None or at < switch:
                switch = at
        if switch is None or switch > requested.high:
            out.append((SizeRange(start, requested.high), cur))
            return out
        out.append((SizeRange(start, switch - 1), cur))
        flatter = [i for i, line in enumerate(lines) if line.slope < lines[cur].slope]
        start, cur = switch, best_at(switch, flatter)


def tiles(ranges: Sequence[SizeRange], requested: SizeRange) -> bool:
    """True when the ranges cover `requested` in order with no gap and no overlap."""
    expect = requested.low
    for r in ranges:
        if r.low != expect or r.high < r.low:
            return False
        expect = r.high + 1
    return expect == requested.high + 1

