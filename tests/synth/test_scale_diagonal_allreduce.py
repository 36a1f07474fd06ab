"""One-chunk Allreduce on GPU squares (issue 24, session 11): the square's sides and, over the NIC, the
diagonal of another node in the first step, then windows doubled across the NICs. The schedule is checked and
within 1.5x of the strongest bound `smtcoll bounds` proves (mi250 x 7: the reach bound, 4 rounds)."""

from __future__ import annotations

from smtcoll import library
from smtcoll.bounds import reach_bound
from smtcoll.check.schedule import check_schedule
from smtcoll.synth.scale import diagonal_allreduce


def test_mi250_seven_nodes_within_one_and_a_half_of_the_bound() -> None:
    t = library.topology("mi250", 7)  # 112 GCDs: neither a power of two nor 3 or 5 x 2^j pairs (was 7 steps)
    coll = library.collective("allreduce", t.ranks)
    s = diagonal_allreduce.diagonal_allreduce(t, coll)
    assert s is not None and check_schedule(s).verdict == "ok"
    bound = reach_bound(t, coll).value  # the strongest `smtcoll bounds` proves here (holdings: 3)
    assert bound == 4 and len(s.steps) == 6 <= 1.5 * bound
