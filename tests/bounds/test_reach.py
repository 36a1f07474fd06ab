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
