"""Alltoall straight over the NICs where they join every GPU pair of two nodes (mi250 x N, issue 24): a
Latin square of rounds between the nodes, the node's own Alltoall alongside; at the entry bound."""

from __future__ import annotations

import pytest

from smtcoll import library
from smtcoll.check.schedule import check_schedule
from smtcoll.synth.scale import direct, engine


@pytest.mark.parametrize("nodes, rounds", [(3, 32), (4, 48)])
def test_mi250_alltoall_at_the_entry_bound(nodes: int, rounds: int) -> None:
    # was 120 rounds on mi250 x 3 (the routing LP too large, the greedy answered)
    t = library.topology("mi250", nodes)
    r = engine.synthesize(t, library.collective("alltoall", t.ranks))
    assert check_schedule(r.schedule).verdict == "ok"
    assert r.method.startswith("straight over the NICs")
    assert len(r.schedule.steps) == r.schedule.rounds == rounds == r.bounds.rounds(1)


def test_two_chunks_per_pair_and_every_nic_busy_every_round() -> None:
    t = library.topology("mi250", 2)
    coll = library.collective("alltoall", t.ranks, None, 2)
    s = direct.direct_alltoall(t, coll, 1000, lambda tt, c: engine._plain(tt, c, None)[0])
    assert s is not None and check_schedule(s).verdict == "ok"
    assert len(s.steps) == 32  # 512 chunks into a node over 16 NICs
    for step in s.steps:
        across = [x for x in step.sends if x.src // 16 != x.dst // 16]
        assert sorted(x.src for x in across) == list(range(32)) == sorted(x.dst for x in across)


def test_not_where_some_gpu_pair_of_two_nodes_has_no_link() -> None:
    for name in ("a100", "dgx2", "ndv2"):  # rails, odd-to-even NICs, one NIC per node
        t = library.topology(name, 2)
        coll = library.collective("alltoall", t.ranks)
        assert direct.direct_alltoall(t, coll, 1000, lambda tt, c: engine._plain(tt, c, None)[0]) is None
