"""The fastest candidate for every buffer size: the lower envelope of the candidates' times over the
requested range, as consecutive size ranges that tile it (no gap, no overlap).

Each candidate's predicted time is piecewise linear in the size (`cost.Piecewise`). Between two
consecutive breakpoints of any candidate every candidate is one line, so there the fastest changes only
where two lines cross, moving to ever smaller slopes (`envelope_lines`); the ranges of those pieces are
joined where the winner stays the same. Everything is exact (fractions), ties go to the smaller slope and
then to the smaller index, so the result never depends on the order of evaluation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from smtcoll.sweep.cost import Line, Piecewise
from smtcoll.sweep.sizes import SizeRange


def envelope_lines(lines: Sequence[Line], requested: SizeRange) -> list[tuple[SizeRange, int]]:
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
        for _i, line in enumerate(lines):
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


def envelope(curves: Sequence[Piecewise], requested: SizeRange) -> list[tuple[SizeRange, int]]:
    """(range, index into `curves`) in increasing size, tiling `requested` (module docstring)."""
    if not curves:
        return []
    # a breakpoint x: the sizes below x are on the piece before it, x and above on the next (`line_at`);
    # a part ends at the last size below x. Pieces need not meet at x (a program's time can jump there).
    cuts = sorted({math.ceil(x) - 1 for c in curves for x in c.starts[1:]})
    cuts = [x for x in cuts if requested.low <= x < requested.high]
    out: list[tuple[SizeRange, int]] = []
    start = requested.low
    for end in [*cuts, requested.high]:
        if end < start:
            continue
        part = SizeRange(start, end)
        for rng, i in envelope_lines([c.line_at(start) for c in curves], part):
            if out and out[-1][1] == i and out[-1][0].high + 1 == rng.low:
                out[-1] = (SizeRange(out[-1][0].low, rng.high), i)
            else:
                out.append((rng, i))
        start = end + 1
    return out


def tiles(ranges: Sequence[SizeRange], requested: SizeRange) -> bool:
    """True when the ranges cover `requested` in order with no gap and no overlap."""
    expect = requested.low
    for r in ranges:
        if r.low != expect or r.high < r.low:
            return False
        expect = r.high + 1
    return expect == requested.high + 1

