"""The reach bound (bounds/reach.py): one-address Allreduce on nodes whose ranks have few links inside."""

from __future__ import annotations

import pytest

from smtcoll import library
from smtcoll.bounds import check_witness, holdings_bound, lower_bounds, reach_bound, search_bounds


def _allreduce(name: str, nodes: int):
    topo = library.topology(name, nodes)
    return topo, library.collective("allreduce", topo.ranks)


def test_mi250_needs_four_rounds_from_five_nodes_where_the_holdings_bound_says_three():
    # GCD 4 (3 xGMI links) reaches 1, 5, 18, 68 contributions after rounds 0..3: short of 80
    for nodes, expected in ((3, 3), (4, 3), (5, 4), (8, 4)):
        topo, coll = _allreduce("mi250", nodes)
        b = reach_bound(topo, coll)
        assert b.value == expected
        assert holdings_bound(topo, coll).value == 3
        row = b.witness["reach"]
        assert row[-2] < topo.ranks <= row[-1] and row[0] == 1


def test_synth_and_bounds_report_it():
    topo, coll = _allreduce("mi250", 6)
    assert search_bounds(topo, coll).least_steps(True, 1) == 4
    rounds = lower_bounds(topo, coll, lp=False).rounds
    assert rounds.value == 4 and rounds.witness["from"] == "reach"


def test_it_applies_only_to_one_address_sums_on_several_nodes():
    topo, _ = _allreduce("mi250", 5)
    assert reach_bound(topo, library.collective("allgather", topo.ranks)).value is None
    assert reach_bound(topo, library.collective("allreduce", topo.ranks, chunks=2)).value is None
    one = library.topology("mi250")
    assert reach_bound(one, library.collective("allreduce", 16)).value is None


@pytest.mark.parametrize("name,nodes", [("ndv2", 4), ("a100", 8), ("dgx2", 9)])
def test_it_stays_below_what_the_engine_builds(name, nodes):
    # the schedules docs/benchmarks.md records: ndv2 x 4 7 steps, a100 x 8 6, dgx2 x 9 10
    topo, coll = _allreduce(name, nodes)
    b = reach_bound(topo, coll)
    assert b.value is not None and b.value <= {"ndv2": 7, "a100": 6, "dgx2": 10}[name]


def test_the_witness_is_recomputed_and_a_changed_number_is_caught():
    topo, coll = _allreduce("mi250", 5)
    b = reach_bound(topo, coll)
    assert check_witness("reach", {"bound": "reach", **b.witness}, topo, coll) == 4
    with pytest.raises(Exception, match="reach"):
        check_witness("reach", {"bound": "reach", **b.witness, "reach": [1, 5, 19, 70, 80]}, topo, coll)


def test_a_port_of_one_value_a_round_narrows_the_tree_dgx2_ten_nodes_need_seven_rounds():
    # an odd GPU (no NIC in, one NVSwitch value a round) holds at most 1, 2, 5, 13, 34, 66, 148 after rounds
    # 0..6 of 160: 7 rounds where the holdings bound says 6; the engine's 10 steps are within 1.5x
    topo, coll = _allreduce("dgx2", 10)
    b = reach_bound(topo, coll)
    assert b.value == 7 and holdings_bound(topo, coll).value == 6
    assert b.witness["reach"] == [1, 2, 5, 13, 34, 66, 148, 160]
    assert check_witness("reach", {"bound": "reach", **b.witness}, topo, coll) == 7
    with pytest.raises(Exception, match="reach"):
        check_witness("reach", {"bound": "reach", **b.witness, "reach": [1, 2, 5, 13, 34, 66, 160, 160]}, topo, coll)


def test_gathered_is_the_first_round_a_rank_may_hold_everything_and_the_phases_build_no_faster_reduce():
    # the reach recursion per rank (session 16): a Reduce to v takes at least gathered(v) rounds; the engine's
    # reduce to its central rank (mi250 x 2, no construction to beat) is no faster
    from smtcoll.synth.scale.engine import _phases

    topo, coll = _allreduce("mi250", 2)
    tables = search_bounds(topo, coll).tables
    assert tables is not None
    for v in (0, 4, 17):
        s = tables.gathered(v)
        assert tables.at(v, s) >= topo.ranks and (s == 0 or tables.at(v, s - 1) < topo.ranks)
    phases = _phases(topo, coll)
    assert phases is not None
    root = min(range(topo.ranks), key=lambda r: (max(topo.distances[r].values()), r))
    # the reduce ends where the broadcast starts: the root holds every contribution after it
    held = {r: {r} for r in range(topo.ranks)}
    for step in phases[0].steps:
        if held[root] == set(range(topo.ranks)):
            break
        before = {r: set(h) for r, h in held.items()}
        for send in step.sends:
            held[send.dst] |= before[send.src]
        reduce_steps = phases[0].steps.index(step) + 1
    assert held[root] == set(range(topo.ranks)) and reduce_steps >= tables.gathered(root)


def test_the_phases_are_not_built_where_twice_the_roots_gathering_exceeds_the_construction(monkeypatch):
    from smtcoll.synth.scale import engine

    topo, coll = _allreduce("mi250", 9)
    tables = search_bounds(topo, coll).tables
    assert tables is not None and engine._own_reverse(topo)

    def built(*args, **kwargs):
        raise AssertionError("a phase was built")

    monkeypatch.setattr(engine, "_plain", built)
    root = min(range(topo.ranks), key=lambda r: (max(topo.distances[r].values()), r))
    assert 2 * tables.gathered(root) > 7  # the constructions' 7 steps
    assert engine._phases(topo, coll, 7, tables) is None
    with pytest.raises(AssertionError, match="built"):  # where it could tie, the broadcast is built
        engine._phases(topo, coll, 2 * tables.gathered(root), tables)


@pytest.mark.parametrize("name", ["mi250", "dgx2"])
def test_the_capacities_into_one_rank_over_its_own_groups_are_those_over_every_group(name):
    # session 16: the recursion asks `_capacity` per rank with only the groups into that rank (a scan of every
    # group per rank cost mi250 x 16 0.3 CPU s); any other group is skipped by `_capacity` itself
    from smtcoll.bounds.entry import _capacity

    topo, _ = _allreduce(name, 2)
    into_one: dict[int, list] = {}
    for g in topo.switches:
        if len(set(g.dsts)) == 1:
            into_one.setdefault(g.dsts[0], []).append(g)
    for v in range(topo.ranks):
        links = [l for l in topo.links if l.dst == v]
        for part in (links, [l for l in links if l.src // (topo.ranks // 2) != v // (topo.ranks // 2)]):
            assert _capacity(topo, part, {v}, groups=into_one.get(v, [])) == _capacity(topo, part, {v})


@pytest.mark.parametrize("name,nodes", [("mi250", 2), ("a100", 3)])
def test_the_phases_the_engine_builds_take_one_round_a_step(name, nodes):
    # the premise of the prune above: the root's gathering bounds rounds, and the engine's one-address phases
    # move one value per link a step (no step of several rounds), so it bounds their steps too
    from smtcoll.synth.scale.engine import _phases

    topo, coll = _allreduce(name, nodes)
    phases = _phases(topo, coll)
    assert phases is not None and all(step.rounds == 1 for step in phases[0].steps)
