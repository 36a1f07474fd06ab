"""What a rank holds after a value arrives: the one rule every schedule simulation applies (step schedules in
`schedule.py`, timed schedules in `timed.py`, the lowering's `lower/transfers.py`).

Values are sets of contributions (chunk ids). For a copy collective a rank keeps what it holds, else takes
the arrival. For a combining collective an incoming value is
- taken instead of the receiver's value when it already contains all of it (a copy, `r` in MSCCL: the
  broadcast half of reduce-then-broadcast);
- added when it shares no contribution with it (a reduction, `rrc` in MSCCL);
- otherwise a double count: the shared contributions would be summed twice (added all the same, so that
  one mistake is reported once).
"""

from __future__ import annotations

EMPTY: frozenset[int] = frozenset()


def arrive(combining: bool, current: frozenset[int], incoming: frozenset[int]) -> tuple[frozenset[int], frozenset[int]]:
    """(the receiver's new value, the contributions counted twice: empty unless it is a double count)."""
    if not combining:
        return current or incoming, EMPTY
    if incoming >= current:
        return incoming, EMPTY
    shared = incoming & current
    return current | incoming, shared
