"""The node-symmetric search (synth/exact/nodes.py): Allgather on MI250 nodes at the holdings bound."""

from __future__ import annotations

import pytest

from smtcoll import library, specs
from smtcoll.model import Collective, Topology
from smtcoll.synth.checked import checked
from smtcoll.synth.door import synthesize
from smtcoll.synth.exact.nodes import NodeLayout, node_schedule
from smtcoll.synth.request import Limits, SynthRequest


def _allgather(name: str, nodes: int) -> tuple[Topology, Collective]:
    topo = specs.resolve_topology(name, nodes)
    return topo, specs.resolve_collective("allgather", topo.ranks)


def test_mi250_x2_allgather_by_default_is_at_the_holdings_bound() -> None:
    # the engine gives 6; the default (auto) reaches the bound 5, proved optimal by it, checked
    result = synthesize(*_allgather("mi250", 2), SynthRequest())
    assert result.status == "found" and result.schedule is not None
    assert len(result.schedule.steps) == 5 and result.schedule.rounds == 5
    assert result.optimal.proved and "holdings" in result.optimal.why
    assert result.method == "exact: node-symmetric" and result.gap is not None and result.gap.gap_steps == 0
    assert 0 < result.work <= 10_000_000
    checked(result.schedule, "test")
    # --method scale is the engine alone: one step above
    scale = synthesize(*_allgather("mi250", 2), SynthRequest(method="scale"))
    assert scale.schedule is not None and len(scale.schedule.steps) == 6


def test_the_same_request_gives_the_same_schedule() -> None:
    topo, coll = _allgather("mi250", 2)
    a, _, _ = node_schedule(topo, coll, [5], None, None)
    b, _, _ = node_schedule(topo, coll, [5], None, None)
    assert a is not None and b is not None and a.steps == b.steps


def test_a_budget_too_small_leaves_the_engines_schedule_and_says_so() -> None:
    result = synthesize(*_allgather("mi250", 2), SynthRequest(limits=Limits(work=1000)))
    assert result.status == "found" and result.schedule is not None and len(result.schedule.steps) == 6
    assert "node-symmetric search found no schedule of 5..5 steps" in result.message


def test_only_machines_of_identical_nodes_with_a_nic_per_rank_on_one_rail() -> None:
    mi = library.topology("mi250", 3)
    lay = NodeLayout.of(mi, library.collective("allgather", 48))
    assert lay is not None and (lay.n, lay.g, lay.nic) == (3, 16, 1) and len(lay.group) == 4
    assert lay.in_slots == [8] * 16  # 7 xGMI slots and the NIC
    # every pattern commutes with the node's automorphisms and is a permutation
    for p in lay.patterns:
        assert sorted(p) == list(range(16))
        assert all(p[h[x]] == h[p[x]] for h in lay.group for x in range(16))
    assert NodeLayout.of(mi, library.collective("alltoall", 48)) is None
    assert NodeLayout.of(library.topology("mi250"), library.collective("allgather", 16)) is None  # one node
    assert NodeLayout.of(library.topology("a100", 2), library.collective("allgather", 16)) is None  # two rails


@pytest.mark.slow  # about 5 s CPU: the bounds, the engine and the search of 9 steps
def test_mi250_x4_allgather_by_default_reaches_the_proved_9() -> None:
    result = synthesize(*_allgather("mi250", 4), SynthRequest())
    assert result.status == "found" and result.schedule is not None and len(result.schedule.steps) == 9
    assert result.optimal.proved and result.method == "exact: node-symmetric"
