"""Sound pruning of candidates before their curves are recovered (docs/sweep.md, "Selection").

A candidate whose time `T` is at least some other live candidate's at every size of the request never
changes the fastest time, so its remaining timing runs are saved. `T` is at least its supporting lines
at both ends (convexity, as `cost.beaten` assumes); the others are bounded from above exactly by their
recovered curves (on each stretch between two of their breakpoints, one line each) and, where only their
ends are known yet, by their chords. Each stretch is then `cost.beaten`'s exact test.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from smtcoll.sweep.cost import Line, Piecewise, beaten


def stretches(curves: Sequence[Piecewise], low: int, high: int) -> list[tuple[int, int]]:
    """Integer size ranges tiling [low, high] on each of which every curve is one line (`Piecewise.line_at`:
    a size at or above a start is on the piece from there)."""
    cuts = sorted({math.ceil(x) for c in curves for x in c.starts[1:] if low < math.ceil(x) <= high})
    out: list[tuple[int, int]] = []
    start = low
    for cut in cuts:
        out.append((start, cut - 1))
        start = cut
    out.append((start, high))
    return out


def beaten_by(first: Line, last: Line, curves: Sequence[Piecewise], ends: Sequence[tuple[Line, Line]],
              low: int, high: int) -> bool:
    """True when at every size of [low, high] a candidate of `curves` (recovered exactly) or of `ends`
    (only the supporting lines at both ends known: its chord bounds it) is at least as fast as a candidate
    whose supporting lines at the ends are `first` and `last`."""
    if not curves and not ends:
        return False
    chords = [_chord(f.at(low), ln.at(high), low, high) for f, ln in ends]
    for lo, hi in stretches(curves, low, high):
        uppers = [c.line_at(lo) for c in curves] + chords
        if not beaten(first, last, uppers, lo, hi):
            return False
    return True


def _chord(a: Fraction, b: Fraction, low: int, high: int) -> Line:
    """The line through (low, a) and (high, b): above the convex time between them (`cost.chord`)."""
    slope = (b - a) / (high - low) if high > low else Fraction(0)
    return Line(a - slope * low, slope)
