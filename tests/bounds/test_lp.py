"""The one LP layer (`smtcoll.bounds.lp`): HiGHS behind `solve`, the concurrent flow by source set and its
dual lengths, which the time bound turns into exact certificates and `synth/scale` uses for routing."""

from __future__ import annotations

from fractions import Fraction

import pytest

from smtcoll import library
from smtcoll.bounds.lp import Commodity, concurrent_flow, lp_bound, solve, unicast_commodities
from smtcoll.bounds.throughput import lengths_certificate, rates
from smtcoll.model import Link, Topology


def test_solve_returns_value_and_duals():
    # min x0 + x1 subject to x0 + x1 >= 2 (as -x0 - x1 <= -2): value 2, the constraint's marginal -1
    r = solve([1.0, 1.0], [[-1.0, -1.0]], [-2.0])
    assert r.status == 0 and r.value == 2.0 and r.ineq_duals == (-1.0,)


def test_concurrent_flow_on_a_line_and_its_dual_proves_the_same():
    # 0 -> 1 -> 2, unit capacities: 1 unit from 0 to 2 and 1 from 1 to 2 share the link 1 -> 2: T = 2
    topo = Topology("line3", 3, [Link(0, 1), Link(1, 2)])
    coms = [Commodity(frozenset({0}), {2: Fraction(1)}), Commodity(frozenset({1}), {2: Fraction(1)})]
    sol = concurrent_flow(topo, coms, [Fraction(1), Fraction(1)], [])
    assert sol is not None and abs(sol.value - 2) < 1e-9
    assert sol.flows[0] == pytest.approx((1.0, 1.0)) and sol.flows[1] == pytest.approx((0.0, 1.0))  # the routing
    assert sol.link_lengths[1] > 0 and sol.link_lengths[0] == 0  # only the shared link is a bottleneck
    # with a small cost per unit of flow (a routing's choice: no circulating flow) the time is the same
    costly = concurrent_flow(topo, coms, [Fraction(1), Fraction(1)], [], flow_cost=1e-6)
    assert costly is not None and abs(costly.value - 2) < 1e-9


def test_alltoall_commodities_are_one_per_source():
    coll = library.collective("alltoall", 8)
    coms = unicast_commodities(coll)
    assert coms is not None and len(coms) == 8 and all(sum(c.demand.values()) == 7 for c in coms)
    assert unicast_commodities(library.collective("allgather", 8)) is None  # multicast: no


def test_rounds_lp_is_the_compact_one_and_as_strong_as_before():
    topo = library.topology("a100", 2)
    b = lp_bound(topo, library.collective("alltoall", 16))
    assert b.value == 10 and b.witness["commodities"] == 16  # issue 24's proved bound, 16 commodities


def test_lengths_certificate_is_weak_duality_for_any_lengths():
    topo = library.topology("ring:4")
    coll = library.collective("alltoall", 4)
    r = rates(topo)
    ones = lengths_certificate(topo, coll, r, [Fraction(1)] * len(topo.links), [])
    # every rank sends 1/4 of the buffer to each other rank: distances 1, 1, 2 -> 4 x (1/4 + 1/4 + 2/4)
    assert ones.demand_distance == 4 and ones.capacity_length == sum(r.link)


def test_the_interior_point_lengths_prove_what_the_simplex_lengths_prove() -> None:
    # the time bound solves its lengths LP with HiGHS's IPM (faster on large machines); the certificate is
    # recomputed exactly, so both methods must prove the same T(B) on a machine of two nodes
    from smtcoll.bounds.throughput import addresses, time_bound

    topo = library.topology("mi250", 2)
    coll = library.collective("alltoall", topo.ranks)
    r = rates(topo)
    coms = unicast_commodities(coll, Fraction(1, addresses(coll)))
    assert coms is not None
    proved = []
    for method in ("highs", "highs-ipm"):
        sol = concurrent_flow(topo, coms, r.link, r.group, method=method)
        assert sol is not None
        proved.append(lengths_certificate(topo, coll, r, sol.link_lengths, sol.group_lengths).us_per_byte)
    assert proved[0] == proved[1] == time_bound(topo, coll).us_per_byte > 0


def test_the_lp_reduced_by_the_machines_symmetries_proves_what_the_full_lp_proves() -> None:
    # mi250 x 2: node shifts x the 4 free automorphisms of a node = 8; one commodity per orbit
    from smtcoll.bounds.symmetric_lp import node_group, symmetric_flow
    from smtcoll.bounds.throughput import addresses

    topo = library.topology("mi250", 2)
    coll = library.collective("alltoall", topo.ranks)
    group = node_group(topo)
    assert group is not None and len(group) == 8
    caps = [Fraction(l.bandwidth) for l in topo.links], [Fraction(g.bandwidth) for g in topo.switches]
    coms = unicast_commodities(coll)
    assert coms is not None
    full, sym = concurrent_flow(topo, coms, *caps), symmetric_flow(topo, coms, *caps)
    assert full is not None and sym is not None and sym.value == pytest.approx(full.value) == 16
    assert lp_bound(topo, coll).value == 16 and lp_bound(topo, coll).witness["symmetries"] == 8
    # the lengths of the reduced LP prove the same time bound, recomputed exactly
    r = rates(topo)
    weighted = unicast_commodities(coll, Fraction(1, addresses(coll)))
    assert weighted is not None
    a, b = (concurrent_flow(topo, weighted, r.link, r.group), symmetric_flow(topo, weighted, r.link, r.group))
    assert a is not None and b is not None
    assert (lengths_certificate(topo, coll, r, a.link_lengths, a.group_lengths).us_per_byte
            == lengths_certificate(topo, coll, r, b.link_lengths, b.group_lengths).us_per_byte)
    # the flows of the reduced LP, mapped to every commodity, carry every demand within T x the capacities
    for i, com in enumerate(coms):
        (src,) = com.sources
        for v in range(topo.ranks):
            net = (sum(f for f, l in zip(sym.flows[i], topo.links, strict=True) if l.dst == v)
                   - sum(f for f, l in zip(sym.flows[i], topo.links, strict=True) if l.src == v))
            want = -sum(com.demand.values()) if v == src else com.demand.get(v, 0)
            assert net == pytest.approx(float(want), abs=1e-6)
    for e, l in enumerate(topo.links):
        assert sum(f[e] for f in sym.flows) <= sym.value * l.bandwidth + 1e-6
    # no such group on one node; a node with more automorphisms than are enumerated (A100's switch): the node
    # shifts times the node's rotations (a NIC per GPU: all 8 of them)
    assert node_group(library.topology("mi250")) is None and len(node_group(library.topology("a100", 2)) or []) == 16
    assert symmetric_flow(library.topology("ring:4"), unicast_commodities(library.collective("alltoall", 4)) or [],
                          [Fraction(1)] * 8, []) is None


def test_the_reduced_lp_is_solved_once_for_the_bound_and_the_routing(monkeypatch: pytest.MonkeyPatch) -> None:
    """`synth` proves its bound with the reduced flow LP and routes with the same LP: one solve, the same
    answer; other arguments (another capacity) solve again."""
    from smtcoll.bounds import symmetric_lp
    from smtcoll.synth.scale import routing
    from smtcoll.synth.scale.translate import alltoall_shape

    solves: list[int] = []
    real = symmetric_lp._symmetric_flow

    def counted(*a: object) -> object:
        solves.append(1)
        return real(*a)  # type: ignore[arg-type]

    monkeypatch.setattr(symmetric_lp, "_symmetric_flow", counted)
    monkeypatch.setattr(symmetric_lp, "_LAST", [])
    t = library.topology("a100", 2)
    # the routing solves the reduced LP, as beyond 40,000 variables
    monkeypatch.setattr(routing, "LP_MAX_VARIABLES", t.ranks * len(t.links) - 1)
    coll = library.collective("alltoall", t.ranks)
    bound = lp_bound(t, coll)
    pairs = alltoall_shape(coll)
    assert pairs is not None
    flows = routing._lp_flows(t, sorted((l.src, l.dst) for l in t.links), pairs)
    assert bound.value == 10 and flows is not None and len(solves) == 1
    coms = unicast_commodities(coll)
    assert coms is not None
    caps = [Fraction(2 * l.bandwidth) for l in t.links], [Fraction(g.bandwidth) for g in t.switches]
    other = symmetric_lp.symmetric_flow(t, coms, *caps)
    assert other is not None and len(solves) == 2


def test_a_node_automorphism_that_moves_the_nic_gpu_leaves_the_node_shifts() -> None:
    # ndv2: the NIC leaves from GPU 0 and arrives at GPU 1, so the cube-mesh's automorphisms that move them
    # are not the machine's; the node shifts still are, and the reduced LP proves what the full one does
    from smtcoll.bounds.symmetric_lp import node_group, symmetric_flow

    topo = library.topology("ndv2", 3)
    group = node_group(topo)
    assert group is not None and len(group) == 3
    assert all(p[r] % 8 == r % 8 for p in group for r in range(topo.ranks))
    caps = [Fraction(l.bandwidth) for l in topo.links], [Fraction(g.bandwidth) for g in topo.switches]
    coms = unicast_commodities(library.collective("alltoall", topo.ranks))
    assert coms is not None
    full, sym = concurrent_flow(topo, coms, *caps), symmetric_flow(topo, coms, *caps)
    assert full is not None and sym is not None and sym.value == pytest.approx(full.value) == 128


def test_switch_machine_shortcuts_keep_the_full_lps_bound(tmp_path):
    """Where `bounds` skips or shrinks an LP on a switch machine, the number is the full LP's, and the time
    bound's certificate is still accepted by `proof check` (and refused when a number in it changes)."""
    import json

    from smtcoll.bounds.lp import _multicast_lp_bound
    from smtcoll.bounds.search import lower_bounds
    from smtcoll.bounds.sink_lp import sink_flow
    from smtcoll.proofs import check_certificate
    from smtcoll.proofs.throughput import write_throughput_certificate

    # Broadcast of 2 chunks through one switch: a tree per chunk meets the cut, no LP solved
    topo = library.topology("hub-and-spoke:8")
    coll = library.collective("broadcast", 8, 0, 2)
    short, full = lower_bounds(topo, coll).lp, _multicast_lp_bound(topo, coll)
    assert short.witness["solver"].startswith("none") and full.witness["solver"] == "scipy HiGHS"
    assert short.value == full.value == 2 and short.per_chunk is not None and full.per_chunk is not None
    assert abs(float(short.per_chunk - full.per_chunk)) < 1e-6
    # Gather to one GPU of a100 x 2: one commodity by sink instead of 15 by source, the same optimum and lengths
    topo = library.topology("a100", 2)
    coll = library.collective("gather", 16, 0, 1)
    r = rates(topo)
    coms = unicast_commodities(coll, Fraction(1, 16))
    assert coms is not None and len(coms) == 15
    by_sink, by_source = sink_flow(topo, coms, r.link, r.group), concurrent_flow(topo, coms, r.link, r.group)
    assert by_sink is not None and by_source is not None and by_sink.value == pytest.approx(by_source.value)
    proved = [lengths_certificate(topo, coll, r, s.link_lengths, s.group_lengths).us_per_byte
              for s in (by_sink, by_source)]
    assert float(proved[0]) == pytest.approx(float(proved[1])) and proved[0] > 0
    for t, c in ((library.topology("hub-and-spoke:8"), library.collective("broadcast", 8, 0, 2)), (topo, coll)):
        path = write_throughput_certificate(t, c, tmp_path)
        assert check_certificate(path).verdict == "ok"
        data = json.loads(path.read_text())
        data["claim"]["us_per_byte"] = str(Fraction(data["claim"]["us_per_byte"]) * 2)
        path.write_text(json.dumps(data))
        assert check_certificate(path).verdict == "error"


def test_the_multicast_lp_stops_at_its_iteration_budget_and_the_other_bounds_stand(monkeypatch):
    """HiGHS's iterations, not the clock, bound the multicast LP: the same answer on a busy machine. Past the
    budget the LP is left out, said so, and the cut still bounds the rounds."""
    import smtcoll.bounds.lp as lp

    topo = library.topology("ndv2", nodes=2)
    coll = library.collective("broadcast", topo.ranks)
    full = lp._multicast_lp_bound(topo, coll)
    assert full.value == 1 and "iterations" not in full.note
    monkeypatch.setattr(lp, "MULTICAST_LP_MAX_ITERATIONS", 5)
    stopped = lp._multicast_lp_bound(topo, coll)
    assert stopped.value is None and "within 5 iterations" in stopped.note
