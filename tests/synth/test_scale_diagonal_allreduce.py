"""One-chunk Allreduce on GPU squares (issue 24, session 11): the square's sides and, over the NIC, the
diagonal of another node in the first step, then windows doubled across the NICs. The schedule is checked and
within 1.5x of the strongest bound `smtcoll bounds` proves (mi250 x 7: the reach bound, 4 rounds)."""

from __future__ import annotations

from smtcoll import library
from smtcoll.bounds import reach_bound
from smtcoll.check.schedule import check_schedule
from smtcoll.model import Link, Nic, Topology
from smtcoll.synth.scale import diagonal_allreduce
from smtcoll.synth.scale.windows_allreduce import _build


def test_mi250_seven_nodes_within_one_and_a_half_of_the_bound() -> None:
    t = library.topology("mi250", 7)  # 112 GCDs: neither a power of two nor 3 or 5 x 2^j pairs (was 7 steps)
    coll = library.collective("allreduce", t.ranks)
    s = diagonal_allreduce.diagonal_allreduce(t, coll)
    assert s is not None and check_schedule(s).verdict == "ok"
    bound = reach_bound(t, coll).value  # the strongest `smtcoll bounds` proves here (holdings: 3)
    assert bound == 4 and len(s.steps) == 6 <= 1.5 * bound


def test_fifteen_groups_of_four_positions_split_other_than_by_powers_of_two() -> None:
    # W_15 over groups of 4 positions: 8 + 7 needs 8 receivers (7 = 4 + 2 + 1), so the plan had none (mi250 x 15
    # fell back to node sums, 10 steps); 10 + 5 takes 5 rounds with 4: 1 + 2 + 5 = 8 steps on 60 squares
    full = {g: [0, 1, 2, 3] for g in range(4)}
    rounds = _build(15, [0, 1, 2, 3], full)
    assert rounds is not None and len(rounds) == 5
    assert _build(15, [0, 1], {0: [0, 1], 1: [0, 1]}) is None  # two receivers: no split reaches 15
    sides = [(0, 1), (2, 3), (0, 2), (1, 3)]
    links = [Link(u, v, 1) for a, b in sides for u, v in ((a, b), (b, a))]
    topo = Topology("square4", 4, links, nics=[Nic([g], [g], 1, 0) for g in range(4)]).compose(60)
    sched = diagonal_allreduce.diagonal_allreduce(topo, library.collective("allreduce", topo.ranks))
    assert sched is not None and len(sched.steps) == 8 and check_schedule(sched).verdict == "ok"
