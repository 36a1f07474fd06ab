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


def _reduce_to_gcd4_in_three_rounds(topo, drop: tuple[int, int] | None = None):
    """A Reduce to GCD 4 of mi250 x 4 in 3 rounds, by hand (docs/benchmarks.md, session 17): node 0 gathers its 12
    GCDs within 3 hops of 4 (round 1: 3-hop GCDs into the 2-hop ring; round 2: the ring into 0, 5, 6; round 3:
    0, 5, 6 into 4); GCD 1 of node 1 gathers its 13 within 2 hops and sends them in round 3; nodes 2 and 3 gather
    into GCDs 5 and 13 (disjoint closed neighbourhoods) and send those in round 2 to 4, 0, 5, 6; node 0's far
    GCDs 11, 13, 14 gather into 15, which sends to node 1's GCD 1 in round 2; the 15 left travel alone in round 1."""
    from smtcoll.model import Schedule, Send, Step

    def g(node: int, gcd: int) -> int:
        return 16 * node + gcd

    local = {1: [(0, a, b) for a, b in [(9, 1), (10, 2), (12, 8), (3, 7), (11, 15), (13, 15), (14, 15)]]
                + [(1, a, b) for a, b in [(4, 0), (8, 0), (6, 5), (7, 5), (2, 9), (13, 9), (11, 10), (14, 10)]]
                + [(nd, a, 5) for nd in (2, 3) for a in (1, 4, 6, 7)]
                + [(nd, a, 13) for nd in (2, 3) for a in (9, 12, 14, 15)],
             2: [(0, a, b) for a, b in [(1, 0), (8, 0), (7, 5), (2, 6)]] + [(1, a, 1) for a in (0, 5, 9, 10)],
             3: [(0, a, 4) for a in (0, 5, 6)]}
    nic = {1: [((1, 3), (0, 15)), ((1, 12), (0, 4)), ((1, 15), (0, 0)), ((2, 0), (0, 5)), ((2, 2), (0, 6)),
               ((2, 3), (0, 1)), ((2, 8), (0, 8)), ((3, 0), (0, 7)), ((3, 2), (0, 2)), ((2, 10), (1, 1)),
               ((2, 11), (1, 0)), ((3, 3), (1, 5)), ((3, 8), (1, 9)), ((3, 10), (1, 10)), ((3, 11), (2, 5))],
           2: [((0, 15), (1, 1)), ((2, 5), (0, 4)), ((2, 13), (0, 0)), ((3, 5), (0, 5)), ((3, 13), (0, 6))],
           3: [((1, 1), (0, 4))]}
    steps = []
    for r in (1, 2, 3):
        pairs = [(g(nd, a), g(nd, b)) for nd, a, b in local[r]] + [(g(*s), g(*d)) for s, d in nic[r]]
        steps.append(Step(1, [Send(0, s, d) for s, d in pairs if (s, d) != drop]))
    return Schedule(topo, library.collective("reduce", topo.ranks, root=4), steps, "reduce-gcd4-3-rounds")


def test_one_rank_can_gather_everything_in_the_rounds_the_reach_bound_allows_mi250_four_nodes():
    # the reach recursion (3 rounds on mi250 x 4) is met by a Reduce to its weakest rank (GCD 4: at most 68 of 64
    # after 3 rounds, unclamped): no bound on what one rank can gather proves the Allreduce's 4 rounds (docs/bounds.md)
    from smtcoll.check.schedule import check_schedule

    topo, coll = _allreduce("mi250", 4)
    tables = search_bounds(topo, coll).tables
    assert tables is not None and tables.gathered(4) == 3 == reach_bound(topo, coll).value
    report = check_schedule(_reduce_to_gcd4_in_three_rounds(topo))
    assert report.verdict == "ok" and report.metrics["rounds"] == 3 and report.metrics["sends"] == 63
    # without node 1's round-3 value (its 13 GCDs and the 11 they collected) GCD 4 misses contributions
    assert check_schedule(_reduce_to_gcd4_in_three_rounds(topo, drop=(17, 4))).verdict != "ok"
