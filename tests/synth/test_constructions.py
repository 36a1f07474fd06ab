"""The throughput constructions: NCCL's baselines and the bandwidth-optimal schedules. Every schedule is
accepted by the checker, lowers within the runtimes' limits and verifies, and reaches the throughput the
docs claim in the sweep's cost model."""

from __future__ import annotations

import re
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from helpers.paths import ROOT

from smtcoll import library
from smtcoll.bounds.throughput import time_bound
from smtcoll.check.schedule import check_schedule
from smtcoll.errors import InternalError, ModelError
from smtcoll.lower import LowerOptions, lower_to_file
from smtcoll.model import Schedule
from smtcoll.sweep.cost import bus_bandwidth, schedule_time
from smtcoll.synth.constructions import METHODS, build, constructions
from smtcoll.synth.constructions import rings as ringlib

GIB = 1 << 30



def _topo(name: str, nodes: int = 1):
    return library.topology(name, nodes)


def _best_busbw(schedule: Schedule, kind: str, size: int = GIB, instances: tuple[int, ...] = (1, 8)) -> float:
    """The best bus bandwidth over the sweep's instance counts (Simple protocol)."""
    match = re.search(r"-(\d+)nodes$", schedule.topology.name)
    nodes = int(match.group(1)) if match else 1
    out = 0.0
    for inst in instances:
        t = schedule_time(schedule, "Simple", inst, size, nodes=nodes)
        if t is not None:
            out = max(out, bus_bandwidth(kind, schedule.topology.ranks, size, t) or 0.0)
    return out


def _lane_use(topo, rings) -> Counter:
    return Counter(e for ring in rings for e in ringlib.edges(ring))


def test_dgx1_splits_into_six_rings_using_every_nvlink() -> None:
    topo = _topo("dgx1")
    rings = ringlib.find_rings(topo)
    assert len(rings) == 6
    assert rings[0] == (0, 1, 2, 3, 7, 5, 6, 4)  # NCCL's first DGX-1 ring
    assert all(sorted(r) == list(range(8)) for r in rings)
    use = _lane_use(topo, rings)
    assert use == Counter({(l.src, l.dst): l.bandwidth for l in topo.links})  # every lane exactly once
    assert ringlib.find_rings(library.topology("dgx1")) == rings  # deterministic


@pytest.mark.parametrize("name, nodes, count", [("dgx2", 1, 1), ("a100", 1, 1), ("ndv2", 2, 1), ("a100", 2, 6),
                                                ("dgx2", 2, 3), ("ring:8", 1, 2), ("mi250", 1, 6),
                                                ("mi250", 2, 6), ("a100", 3, 5)])
def test_rings_respect_lanes_switches_and_nodes(name: str, nodes: int, count: int) -> None:
    """Lane-disjoint rings; across nodes each takes its own NIC lanes and shares the switch inside a node, as
    NCCL's channels do (a100 x 2 had one ring through one of its 8 NICs: 25 GB/s where NCCL runs a channel per
    NIC; with a NIC per GPU the next node runs the path reversed, and on 3 nodes the last two close it)."""
    topo = _topo(name, nodes)
    rings = ringlib.find_rings(topo)
    assert len(rings) == count
    use = _lane_use(topo, rings)
    assert all(n <= topo.bandwidth(u, v) for (u, v), n in use.items())
    per = topo.ranks // nodes
    for g in topo.switches:
        if nodes == 1 or {r // per for r in (*g.srcs, *g.dsts)} != {g.srcs[0] // per}:
            assert sum(n for (u, v), n in use.items() if u in g.srcs and v in g.dsts) <= g.bandwidth
    per = topo.ranks // nodes
    for ring in rings:
        assert sorted(ring) == list(range(topo.ranks))
        # each node's GPUs contiguous: the ring crosses between nodes exactly `nodes` times
        crossings = sum(1 for u, v in ringlib.edges(ring) if u // per != v // per)
        assert crossings == (nodes if nodes > 1 else 0)


def test_no_ring_on_a_line() -> None:
    topo = _topo("line:4")
    assert ringlib.find_rings(topo) == ()
    # the ring families do not apply; the tree packings do
    assert [c.name for c in constructions(topo, library.collective("allgather", 4))] == ["treepack", "forest"]


@pytest.mark.parametrize("kind", ["allgather", "reducescatter", "allreduce"])
def test_ndv2_rings_reach_the_ingress_bound(kind: str) -> None:
    """7/24 round per chunk for Allreduce (2(N-1)/N of a buffer through 6 lanes): 150 GB/s in the model
    with its 20 GB/s channels, 148.9 after the protocol latency at 1 GiB."""
    topo = _topo("ndv2")
    found = {c.name: c for c in constructions(topo, library.collective(kind, 8))}
    assert found["nccl_ring"].nccl == "ring" and found["multiring"].nccl is None
    s = found["multiring"].schedule
    per_chunk = s.rounds / s.collective.chunk_factor
    assert per_chunk == (14 / 48 if kind == "allreduce" else 7 / 6)
    assert _best_busbw(s, kind) >= 148


def test_ndv2_two_nodes_ring_goes_at_nic_speed() -> None:
    topo = _topo("ndv2", 2)
    ring = next(c for c in constructions(topo, library.collective("allreduce", 16)) if c.name == "nccl_ring")
    assert 12.0 <= _best_busbw(ring.schedule, "allreduce") <= 12.5


# dgx1: every construction lowered and verified by test_dgx1_constructions_lower_and_verify below; a graph
# without nodes or switches: ring:8 (torus2d:4x4, 20 s, dropped for the suite's time in session 11)
# (ndv2 x2's constructions: the hierarchical tests below and tests/sweep/test_sweep.py's ndv2 rows)
MACHINES = [("dgx2", 1), ("a100", 1), ("a100", 2), ("mi250", 1), ("ring:8", 1)]
KINDS = ["allgather", "reducescatter", "allreduce", "broadcast", "reduce", "alltoall"]


@pytest.mark.slow
@pytest.mark.parametrize("name, nodes", MACHINES)
def test_every_construction_is_checked_and_lowers(name: str, nodes: int) -> None:
    topo = _topo(name, nodes)
    for kind in KINDS:
        # `constructions` runs the checker on every schedule it returns; here each is lowered and verified,
        # one of each construction and piece count (`pairwise` in its other order sends the same messages in
        # another order, and lowers the same way)
        lowered = set()
        for c in constructions(topo, library.collective(kind, topo.ranks)):
            assert c.chunks == c.schedule.collective.chunk_factor
            if (c.name, c.chunks) in lowered:
                continue
            lowered.add((c.name, c.chunks))
            with tempfile.TemporaryDirectory() as d:
                summary, _ = lower_to_file(c.schedule, Path(d) / "a.xml", LowerOptions())
                assert summary["written"], (name, kind, c.name)


@pytest.mark.parametrize("kind", KINDS)
def test_dgx1_constructions_lower_and_verify(kind: str) -> None:
    topo = _topo("dgx1")
    built = constructions(topo, library.collective(kind, 8))
    assert built
    for c in built:
        with tempfile.TemporaryDirectory() as d:
            summary, report = lower_to_file(c.schedule, Path(d) / "a.xml", LowerOptions())
            assert summary["written"] and report is not None and report.verdict == "ok"


def test_direct_alltoall_on_a_switch_is_one_step() -> None:
    topo = _topo("a100")
    s = build("direct", topo, library.collective("alltoall", 8))
    assert len(s.steps) == 1 and s.rounds == 7  # every rank sends 7 chunks through its one port


def test_a_rejected_construction_is_an_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real = ringlib.allgather_steps
    monkeypatch.setattr(ringlib, "allgather_steps", lambda rings, coll: real(rings, coll)[:-1])
    with pytest.raises(InternalError, match="rejected by the checker"):
        constructions(_topo("dgx1"), library.collective("allgather", 8))


def test_methods_match_the_cli_choices() -> None:
    from smtcoll.cli.synth import Method

    assert {m.value for m in Method} - {"auto", "exact", "scale"} == set(METHODS)


def test_build_says_when_a_construction_does_not_apply() -> None:
    with pytest.raises(ModelError, match="ring does not apply to alltoall"):
        build("ring", _topo("dgx1"), library.collective("alltoall", 8))
    with pytest.raises(ModelError, match="unknown construction"):
        build("nope", _topo("dgx1"), library.collective("alltoall", 8))


@pytest.mark.slow
def test_cli_synth_with_a_construction(cli, tmp_path: Path) -> None:
    xml = tmp_path / "ar.xml"
    r = cli("synth", "-t", "ndv2", "-c", "allreduce", "--method", "multiring", "--xml", str(xml), "--format", "json")
    assert r.returncode == 0, r.stderr
    assert '"method": "construction: multiring"' in r.stdout and '"chunks": 48' in r.stdout
    assert cli("verify", str(xml)).returncode == 0
    bad = cli("synth", "-t", "ndv2", "-c", "alltoall", "--method", "ring")
    assert bad.returncode == 2 and "does not apply" in bad.stderr and "Traceback" not in bad.stderr


# (ndv2 x2 Allreduce by hier: test_hierarchical_allreduce_on_two_ndv2_nodes_within_5_percent_of_the_proved_bound)
# (hier ReduceScatter across nodes: test_hierarchical_along_the_ring_of_nodes_within_5_percent_of_the_proved_bound)
@pytest.mark.parametrize("name, kind, method, at_least", [("ndv2", "allgather", "hier", 19.5)])
def test_hierarchical_beats_the_ring_through_one_nic(name: str, kind: str, method: str, at_least: float) -> None:
    """ndv2 x2: the ring crosses the NIC 2(N-1)/N times per buffer (12.5 GB/s bus bandwidth); the
    hierarchy crosses it once each way (bound 23.44; the Allreduce within 5% of it: 22.27)."""
    topo = _topo(name, 2)
    found = {c.name: c for c in constructions(topo, library.collective(kind, 16))}
    hier = found[method].schedule
    assert _best_busbw(hier, kind) >= at_least > _best_busbw(found["nccl_ring"].schedule, kind)
    # the lowering's limit: no link carries more than its thread blocks hold once spread over channels
    assert max(Counter((x.src, x.dst) for s in hier.steps for x in s.sends).values()) <= 3 * 64


@pytest.mark.parametrize("size", [256 << 20, GIB])
def test_hierarchical_allreduce_on_two_ndv2_nodes_within_5_percent_of_the_proved_bound(size: int) -> None:
    """Issue 23's target at the sizes it names: `synth --method hier` on ndv2 x2, lowered as the sweep
    lowers it, within 5% of the NIC cut bound (23.44 GB/s) that `bounds` proves, at 256 MiB and at 1 GiB
    (was 0.948 at 256 MiB with shortest trees for two addresses at each end of the pipeline, not four)."""
    topo = _topo("ndv2", 2)
    coll = library.collective("allreduce", 16)
    proved = time_bound(topo, coll).busbw_gbps(size)
    assert proved is not None and float(proved) == 23.4375
    bound = float(proved)
    assert _best_busbw(build("hier", topo, coll), "allreduce", size) >= 0.95 * bound


@pytest.mark.slow  # 24 and 32 ranks, two sizes: 3-4 CPU s each (one instance meets it; x8 takes 10x as long to time)
@pytest.mark.parametrize("nodes, kind, proved_gbps", [(4, "allreduce", 16.1458), (4, "reducescatter", 16.1458),
                                                      (3, "allreduce", 17.9688)])
def test_hierarchical_along_the_ring_of_nodes_within_5_percent_of_the_proved_bound(nodes: int, kind: str,
                                                                                   proved_gbps: float) -> None:
    """Issue 23's target on more nodes: `synth --method hier` on ndv2 x3 and x4 within 5% of the bound
    `bounds` proves (the NIC cut; for Allreduce the 2(n-1) transfers between n nodes, 1.5 buffers through
    each NIC on 4 nodes, 4/3 on 3) at 256 MiB and 1 GiB. With partial sums sent straight to the owner's
    node instead of along the ring x4 reached 0.82 (ReduceScatter) and 0.92 (Allreduce)."""
    topo = _topo("ndv2", nodes)
    coll = library.collective(kind, topo.ranks)
    s = build("hier", topo, coll)
    # every NIC sends to the next node only
    crossing = {(x.src // 8, x.dst // 8) for st in s.steps for x in st.sends if x.src // 8 != x.dst // 8}
    assert crossing == {(i, (i + 1) % nodes) for i in range(nodes)}
    for size in (256 << 20, GIB):
        proved = time_bound(topo, coll).busbw_gbps(size)
        assert proved is not None and round(float(proved), 4) == proved_gbps
        assert _best_busbw(s, kind, size, instances=(1,)) >= 0.95 * float(proved)


@pytest.mark.parametrize("kind", ["allreduce", "allgather"])
def test_two_dimensional_keeps_nic_and_nvswitch_steps_apart(kind: str) -> None:
    topo = _topo("a100", 2)
    s = build("hier2d", topo, library.collective(kind, 16))
    for step in s.steps:
        crossing = {x.src // 8 != x.dst // 8 for x in step.sends}
        assert len(crossing) == 1  # a step moves either inside the nodes or across them
    assert _best_busbw(s, kind) >= 100


def test_hierarchies_need_several_nodes() -> None:
    with pytest.raises(ModelError, match="several nodes"):
        build("hier", _topo("ndv2"), library.collective("allreduce", 8))
    with pytest.raises(ModelError, match="no link from local rank"):
        build("hier2d", _topo("ndv2", 2), library.collective("allreduce", 16))


def test_nccl_double_binary_tree_shape() -> None:
    from smtcoll.synth.constructions.nccl import btree_parent, dtree_parents

    assert [btree_parent(4, r) for r in range(4)] == [None, 2, 0, 2]  # 0 - 2 - {1, 3}, as ncclGetBtree
    first, second = dtree_parents(4)
    assert second == [1, 3, 1, None]  # mirrored: 3 - 1 - {0, 2}
    for n in (2, 3, 5, 8):
        first, second = dtree_parents(n)
        for parents in (first, second):
            assert parents.count(None) == 1
            for r in range(n):  # every rank reaches the root
                seen: set[int] = set()
                x: int | None = r
                while x is not None and parents[x] is not None:
                    assert x not in seen
                    seen.add(x)
                    x = parents[x]
        inner = [{p for p in t if p is not None} for t in (first, second)]
        assert not (inner[0] & inner[1]) or n % 2  # even n: no rank is inside both trees


@pytest.mark.parametrize("name, nodes", [("ndv2", 1), ("ndv2", 2)])
def test_nccl_tree_allreduce(name: str, nodes: int) -> None:
    topo = _topo(name, nodes)
    c = next(c for c in constructions(topo, library.collective("allreduce", topo.ranks)) if c.name == "nccl_tree")
    assert c.nccl == "tree"
    assert max(Counter((x.src, x.dst) for s in c.schedule.steps for x in s.sends).values()) <= 64
    with tempfile.TemporaryDirectory() as d:
        summary, _ = lower_to_file(c.schedule, Path(d) / "a.xml", LowerOptions())
        assert summary["written"]


@pytest.mark.parametrize("name, kind", [("dgx1", "allgather"), ("a100", "reducescatter"), ("mi250", "broadcast"),
                                        ("torus2d:4x4", "reduce"), ("line:4", "allreduce")])
def test_tree_packing_spreads_over_the_links(name: str, kind: str) -> None:
    topo = _topo(name)
    s = build("treepack", topo, library.collective(kind, topo.ranks))
    load = Counter((x.src, x.dst) for st in s.steps for x in st.sends)
    # the busiest resource (a lane, or a switch port where there are switches) carries at most twice the
    # average share: the trees do not pile up on a few links
    if topo.switches:
        shares = [sum(v for (u, w), v in load.items() if u in g.srcs and w in g.dsts) / g.bandwidth
                  for g in topo.switches]
    else:
        shares = [load.get((l.src, l.dst), 0) / l.bandwidth for l in topo.links]
    assert max(shares) <= 2 * sum(shares) / len(shares) + 1


def test_constructions_are_deterministic() -> None:
    """The same input gives the same schedules, also without the ring search's cache."""
    topo = _topo("ndv2", 2)
    coll = library.collective("allreduce", 16)
    first = [(c.name, c.schedule.steps) for c in constructions(topo, coll)]
    ringlib.find_rings.cache_clear()
    again = [(c.name, c.schedule.steps) for c in constructions(_topo("ndv2", 2), coll)]
    assert first == again


def _alltoall_bound(topo, size: int = GIB) -> float:
    from smtcoll.bounds.throughput import time_bound

    tb = time_bound(topo, library.collective("alltoall", topo.ranks))
    return bus_bandwidth("alltoall", topo.ranks, size, tb.us_per_byte * size) or 0.0


@pytest.mark.parametrize(("name", "nodes", "share"), [("a100", 1, 0.95), ("dgx2", 1, 0.95), ("a100", 2, 0.83),
                                                   ("dgx2", 2, 0.95)])
def test_exchange_reaches_the_alltoall_bound_on_switches(name: str, nodes: int, share: float) -> None:
    """The LP-routed pairwise exchange, one instance (every model's instance count), at 256 MiB: a100 300 GB/s
    and dgx2 125 GB/s ports, within 5% of the proved bound (NCCL's all-pairs sends: 0.52 and 0.89 of it in the
    same model); a100 x2 through its eight 25 GB/s NICs, 0.84 of the bound (docs/benchmarks.md); dgx2 x2
    through its eight 12.5 GB/s NICs, each fed by two GPUs, 0.98 (0.89 when its NIC connections held more
    messages than a thread block's steps and were dealt over two channels)."""
    topo = _topo(name, nodes)
    s = build("exchange", topo, library.collective("alltoall", topo.ranks))
    assert check_schedule(s).verdict == "ok"
    size = 1 << 28
    t = schedule_time(s, "Simple", 1, size, nodes=nodes)
    assert t is not None
    got = bus_bandwidth("alltoall", topo.ranks, size, t) or 0.0
    assert got >= share * _alltoall_bound(topo, size)
    direct = schedule_time(build("direct", topo, library.collective("alltoall", topo.ranks)), "Simple", 1, size,
                           nodes=nodes)
    assert direct is not None and t < direct


def test_exchange_routes_across_nodes_through_every_nic_evenly() -> None:
    """a100 x2: each GPU's NIC reaches only its rail; the LP bridges the rails over NVSwitch so that all
    eight NICs of a node carry the same share (8 pairs' worth each way, the NIC bound)."""
    topo = _topo("a100", 2)
    s = build("exchange", topo, library.collective("alltoall", 16))
    c = s.collective.chunk_factor
    load: Counter = Counter()
    for step in s.steps:
        for x in step.sends:
            for g in topo.switches_of(x.src, x.dst):
                if "nic" in topo.switches[g].name:
                    load[topo.switches[g].name] += 1
    assert len(load) == 32  # every NIC's out and in group is used
    assert max(load.values()) <= 8 * c + 1 and min(load.values()) >= 8 * c - 1
    # within the lowering's limits: no connection holds more messages than a thread block's steps
    assert max(Counter((x.src, x.dst) for st in s.steps for x in st.sends).values()) <= 64


def test_exchange_applies_to_alltoall_only() -> None:
    with pytest.raises(ModelError, match="exchange does not apply to allgather"):
        build("exchange", _topo("a100"), library.collective("allgather", 8))


def _bound_busbw(topo, kind: str) -> float:
    from smtcoll.bounds.throughput import time_bound

    coll = library.collective(kind, topo.ranks)
    return bus_bandwidth(kind, topo.ranks, GIB, time_bound(topo, coll, 25.0, 1.0).at(GIB)) or 0.0


# (machine, nodes, collective, share of the proved throughput bound at 1 GiB in the sweep's model); the
# measured shares are in docs/benchmarks.md ("The multi-rail construction")
# (dgx2 x2 Allreduce: `lanes` is its choice, test_lanes_on_dgx2_feeds_every_nic_and_beats_rail)
RAIL_SHARES = [("ndv2", 4, "allgather", 0.95), ("dgx2", 2, "allgather", 0.95), ("dgx2", 2, "reducescatter", 0.95),
               ("a100", 2, "allgather", 0.85), ("a100", 2, "reducescatter", 0.8),
               ("a100", 2, "allreduce", 0.7)]


@pytest.mark.parametrize("name, nodes, kind, share", RAIL_SHARES)
def test_rail_uses_every_nic_and_reaches_the_bound(name: str, nodes: int, kind: str, share: float) -> None:
    """Every NIC carries the same share, and the rings inside the nodes overlap the NICs: within `share`
    of the tight bound, above NCCL's ring through the NICs (one NIC's speed; 10x on dgx2 x2)."""
    topo = _topo(name, nodes)
    s = build("rail", topo, library.collective(kind, topo.ranks))
    assert check_schedule(s).verdict == "ok"
    per_node = topo.ranks // nodes
    crossing = Counter((x.src, x.dst) for step in s.steps for x in step.sends if x.src // per_node != x.dst // per_node)
    senders = {src for src, _ in crossing if src // per_node == 0}
    assert len(senders) == len(library.topology(name).nics)  # every NIC of node 0 sends
    assert max(crossing.values()) == min(crossing.values())  # evenly
    got, bound = _best_busbw(s, kind), _bound_busbw(topo, kind)
    assert got >= share * bound, f"{got:.1f} GB/s, bound {bound:.1f}"
    ring = build("ring", topo, library.collective(kind, topo.ranks))
    assert got > _best_busbw(ring, kind)


def test_rail_allreduce_on_a_switch_takes_a_second_ring() -> None:
    """dgx2 x2: one ring inside a node holds one piece per rank per phase at most (a thread block's steps);
    a second ring i -> i + 3 through the same switch, and the Allgather on the reversed rings, give two
    pieces per rank (64 addresses), so that the Allgather's NIC crossing starts before the last ring round."""
    topo = _topo("dgx2", 2)
    s = build("rail", topo, library.collective("allreduce", topo.ranks))
    assert check_schedule(s).verdict == "ok"
    from smtcoll.bounds.throughput import addresses

    assert addresses(s.collective) == 2 * topo.ranks
    inside = {(x.src, x.dst) for step in s.steps for x in step.sends if x.src < 16 and x.dst < 16}
    assert {(b - a) % 16 for a, b in inside} == {1, 3, 13, 15}


@pytest.mark.parametrize("name, nodes", [("a100", 3)])
def test_rail_allreduce_beats_nccls_ring_on_other_shapes(name: str, nodes: int) -> None:
    """Not tuned to two nodes: three, with a NIC per GPU (A100) or whose sender and receiver are
    different GPUs (DGX-2). `rail` at 8 instances against the ring at its best, 1 or 2 (through one NIC its
    instances gain nothing, and from 4 on they contend: 124.8 GB/s at 1 and 2, 117.9 at 8; timing the
    rings of 8 instances was 60% of this test)."""
    topo = _topo(name, nodes)
    coll = library.collective("allreduce", topo.ranks)
    s = build("rail", topo, coll)
    assert check_schedule(s).verdict == "ok"
    ring = _best_busbw(build("ring", topo, coll), "allreduce", instances=(1, 2))
    assert _best_busbw(s, "allreduce", instances=(8,)) > 1.1 * ring


def test_rail_needs_several_nodes() -> None:
    with pytest.raises(ModelError, match="several nodes"):
        build("rail", _topo("a100"), library.collective("allgather", 8))
    with pytest.raises(ModelError, match="Allreduce, Allgather and ReduceScatter"):
        build("rail", _topo("a100", 2), library.collective("alltoall", 16))


def test_cli_synth_rail(cli) -> None:
    r = cli("synth", "-t", "dgx2", "--nodes", "2", "-c", "reducescatter", "--method", "rail", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert '"method": "construction: rail"' in r.stdout and '"status": "found"' in r.stdout


def _bound(topo, kind: str, size: int = GIB) -> float:
    from smtcoll.bounds.throughput import time_bound

    bound = time_bound(topo, library.collective(kind, topo.ranks)).busbw_gbps(size)
    assert bound is not None
    return float(bound)


@pytest.mark.parametrize("kind", ["allgather", "reducescatter", "allreduce"])
def test_pairwise_reaches_the_port_bound_where_rings_do_not(kind: str) -> None:
    """a100: a 300 GB/s NVSwitch port, 40 GB/s per channel. The shifted pairwise exchange, with 1 or 2
    instances (the shipped model's smallest), at 256 MiB is within 5% of the proved bound (Allreduce with
    one instance: 0.949, since a long connection's messages are dealt round-robin over the channels);
    NCCL's ring, even with 8 instances, is not (0.89 of it for Allgather and ReduceScatter, 0.94 for
    Allreduce: its instances contend for the port)."""
    topo = _topo("a100")
    coll = library.collective(kind, 8)
    s = build("pairwise", topo, coll)
    assert check_schedule(s).verdict == "ok"
    size = 1 << 28
    times = [schedule_time(s, "Simple", inst, size) for inst in (1, 2)]
    assert None not in times
    t = min(x for x in times if x is not None)
    got = bus_bandwidth(kind, 8, size, t) or 0.0
    assert got >= 0.95 * _bound(topo, kind, size)
    ring = schedule_time(build("ring", topo, coll), "Simple", 8, size)
    assert ring is not None and t < ring


@pytest.mark.parametrize("kind", ["allgather", "reducescatter", "allreduce"])
def test_pairwise_sends_each_pair_its_share_once(kind: str) -> None:
    """Every ordered pair carries the same number of pieces (one phase, or two for Allreduce), more than the
    lowering's fusion limit and within two thread blocks; every send goes straight to a pair (no relay)."""
    topo = _topo("a100")
    s = build("pairwise", topo, library.collective(kind, 8))
    per_pair = Counter((x.src, x.dst) for st in s.steps for x in st.sends)
    assert len(per_pair) == 8 * 7
    assert len(set(per_pair.values())) == 1
    assert 32 < next(iter(per_pair.values())) <= 96
    c = s.collective.chunk_factor
    if kind == "allgather":  # rank s sends only pieces of its own block
        assert all(x.chunk // c == x.src for st in s.steps for x in st.sends)
    if kind == "reducescatter":  # every piece goes to its block's owner
        assert all(x.chunk // c == x.dst for st in s.steps for x in st.sends)


def test_pairwise_lowers_and_verifies_on_dgx2() -> None:
    """16 ranks on NVSwitch: lowered and verified by the checker's reading of the XML (one instance: with 8,
    a rank would wait for more thread blocks than the executor's int8 depid can name; the sweep drops those)."""
    topo = _topo("dgx2")
    s = build("pairwise", topo, library.collective("reducescatter", 16))
    with tempfile.TemporaryDirectory() as d:
        summary, report = lower_to_file(s, Path(d) / "a.xml", LowerOptions())
        assert summary["written"] and report is not None and report.verdict == "ok"


def test_pairwise_needs_every_pair_of_a_node_linked() -> None:
    with pytest.raises(ModelError, match="pairwise does not apply to allgather on dgx1: no link 0 -> 5"):
        build("pairwise", _topo("dgx1"), library.collective("allgather", 8))
    with pytest.raises(ModelError, match="pairwise does not apply to allgather on ndv2-2nodes"):
        build("pairwise", _topo("ndv2", 2), library.collective("allgather", 16))
    with pytest.raises(ModelError, match="covers Allgather, ReduceScatter and Allreduce"):
        build("pairwise", _topo("a100"), library.collective("alltoall", 8))


@pytest.mark.parametrize(("kind", "share"), [("allgather", 0.95), ("reducescatter", 0.95), ("allreduce", 0.95)])
def test_pairwise_across_nodes_uses_the_rails(kind: str, share: float) -> None:
    """a100 x2: every rank crosses to its rail peer (the same local rank) only, the exchange inside the
    nodes relays; one instance at 1 GiB, against the proved bound (rail: 0.87 / 0.84 / 0.89 of it at its
    best, docs/benchmarks.md). Allreduce, ordered in time (a NIC holds a piece 12x longer than a port, and a
    sum is forwarded one message latency after its last share): 0.98 (0.65 in rounds)."""
    topo = _topo("a100", 2)
    s = build("pairwise", topo, library.collective(kind, 16))
    assert check_schedule(s).verdict == "ok"
    across = {(x.src, x.dst) for st in s.steps for x in st.sends if x.src // 8 != x.dst // 8}
    assert across == {(r, (r + 8) % 16) for r in range(16)}
    t = schedule_time(s, "Simple", 1, GIB, nodes=2)
    assert t is not None
    assert (bus_bandwidth(kind, 16, GIB, t) or 0.0) >= share * _bound(topo, kind)


def test_behind_leaf_uplinks_the_rails_run_as_a_ring_of_the_nodes() -> None:
    """Held-out fattree4x4: 4 nodes of 4 GPUs written link by link, two nodes a leaf, a leaf's 4 uplinks for its
    8 NICs. NCCL's rings pack all 4 NICs of a node (a greedy choice of where each ring enters a node took 3);
    `pairwise`'s rails sent each piece straight to every other node, twice over the uplinks, 0.72 of the bound
    at 1 GiB; round the nodes each crosses once: 0.99, and faster than NCCL's rings."""
    from smtcoll import specs
    from smtcoll.sweep.cost import Model
    from smtcoll.sweep.tasks import model_bound
    from smtcoll.synth.constructions.nccl import lowerable_rings
    from smtcoll.synth.constructions.pairwise import _Layout, _uplinks, pairwise

    topo = specs.resolve_topology(str(ROOT / "benchmarks" / "topologies" / "heldout" / "fattree4x4.toml"))
    assert topo.node_count == 4
    coll = library.collective("allgather", 16)
    assert len(lowerable_rings(topo, coll)) == 4
    assert _uplinks(topo, _Layout(topo, planes=True))  # offered by `pairwises`
    assert not _uplinks(_topo("a100", 3), _Layout(_topo("a100", 3)))  # NIC groups alone: the direct rails
    model = Model.load()
    ring = pairwise(topo, coll, planes=True, ring=True)
    assert check_schedule(ring).verdict == "ok"
    crossings = [(x.src // 4, x.dst // 4) for st in ring.steps for x in st.sends if x.src // 4 != x.dst // 4]
    assert crossings and all(b == (a + 1) % 4 for a, b in crossings)  # every crossing to the next node
    bound = model_bound(topo, coll, 1, model)(GIB)
    t = schedule_time(ring, "Simple", 2, GIB, model)
    direct = schedule_time(pairwise(topo, coll, planes=True), "Simple", 2, GIB, model)
    nccl = schedule_time(build("ring", topo, coll), "Simple", 2, GIB, model)
    assert t is not None and direct is not None and nccl is not None
    assert bound / t >= 0.98 and bound / direct < 0.8 and t < nccl
    # the leaves holding nodes 0, 2 and 1, 3 (nodes 1 and 2 swapped): the rings go round in leaf order
    import attrs

    from smtcoll.model import Topology

    def swap(r: int) -> int:
        return {1: 2, 2: 1}.get(r // 4, r // 4) * 4 + r % 4

    links = sorted((attrs.evolve(lk, src=swap(lk.src), dst=swap(lk.dst)) for lk in topo.links),
                   key=lambda lk: (lk.src, lk.dst))
    groups = [attrs.evolve(g, srcs=[swap(x) for x in g.srcs], dsts=[swap(x) for x in g.dsts]) for g in topo.switches]
    other = Topology("fattree-swapped", 16, links, groups)
    assert ringlib.node_order(other, ringlib.nodes_of(other)) == [0, 2, 1, 3]
    assert len(lowerable_rings(other, coll)) == 4
    ring = pairwise(other, coll, planes=True, ring=True)
    assert check_schedule(ring).verdict == "ok"
    follows = {0: 2, 2: 1, 1: 3, 3: 0}
    assert all(follows[x.src // 4] == x.dst // 4 for st in ring.steps for x in st.sends if x.src // 4 != x.dst // 4)


@pytest.mark.slow
def test_pairwise_offers_a_fused_program_that_lowers_at_8_instances() -> None:
    """a100 x3 ReduceScatter: `pairwise`'s own piece count spreads each connection over two channels, and at
    8 instances a rank then waits for more thread blocks than the executor's int8_t depid names; the sweep
    also gets the program with at most 32 messages per connection, which lowers there and at 1 GiB is within
    5% of the sweep's bound (0.954), faster than the unfused one at its most instances that lower (4: 0.935,
    docs/benchmarks.md "Unseen machines and sizes (session 9)")."""
    from smtcoll.sweep.cost import Model
    from smtcoll.sweep.tasks import model_bound
    from smtcoll.synth.constructions.pairwise import FUSED_LIMIT, pairwises

    topo = _topo("a100", 3)
    coll = library.collective("reducescatter", 24)
    mine = pairwises(topo, coll)
    assert len(mine) == 3  # and one in a quarter of the pieces (below)
    unfused, fused = mine[:2]
    assert check_schedule(fused).verdict == "ok"
    per_pair = Counter((x.src, x.dst) for st in fused.steps for x in st.sends)
    assert max(per_pair.values()) <= FUSED_LIMIT < max(Counter((x.src, x.dst) for st in unfused.steps
                                                                for x in st.sends).values())
    # (the unfused one is refused at 8 instances: depid, the refusal tests/lower/test_lower_implied.py checks)
    t = schedule_time(fused, "Simple", 8, GIB, nodes=3)  # (the unfused one at 4 instances: 0.935, not timed here)
    assert t is not None and model_bound(topo, coll, 3, Model.load())(GIB) / t >= 0.95


def test_pairwise_reducescatter_in_fewer_pieces_lowers_at_4_instances_across_4_nodes() -> None:
    """h100 x 4 ReduceScatter: `pairwise`'s own pieces (24 chunks) at 4 instances need more XML nodes per rank
    than the runtimes' readers hold (the sweep took 2 instances: 0.85 of the bound at 256 MiB); the sweep also
    gets the schedule in a quarter of the pieces, which lowers at 4 instances (0.92, docs/benchmarks.md)."""
    from smtcoll import specs
    from smtcoll.check.parse_rules import rank_nodes
    from smtcoll.lower import lower
    from smtcoll.msccl.runtime import MAX_NODES
    from smtcoll.synth.constructions.pairwise import pairwises

    topo = specs.resolve_topology(str(ROOT / "benchmarks/topologies/heldout/h100.toml"), 4)
    first, _, coarse = pairwises(topo, library.collective("reducescatter", 32))
    assert coarse.collective.chunk_factor < first.collective.chunk_factor
    assert check_schedule(coarse).verdict == "ok"
    options = LowerOptions(4, "Simple", "executor", "outofplace", 1 << 28, GIB, True, "t")
    for s, fits in ((first, False), (coarse, True)):
        program = lower(s, options).program
        assert (max(rank_nodes(program, g) for g in program.gpus) <= MAX_NODES) == fits


def test_pairwise_allreduce_across_three_nodes_also_in_larger_pieces() -> None:
    """h100 x 3 Allreduce at 256 MiB: `pairwise`'s own 384 chunks lower at 2 instances at most and take 1272 us
    (Simple); the sweep also gets the schedule in COARSE_PIECES, which is faster (1078 us at 2 instances)."""
    from smtcoll import specs
    from smtcoll.synth.constructions.pairwise import COARSE_PIECES, pairwise

    topo = specs.resolve_topology(str(ROOT / "benchmarks/topologies/heldout/h100.toml"), 3)
    coll = library.collective("allreduce", 24)
    first, coarse = pairwise(topo, coll), pairwise(topo, coll, pieces=COARSE_PIECES)
    assert coarse.collective.chunk_factor < first.collective.chunk_factor
    assert check_schedule(coarse).verdict == "ok"
    fine, fewer = (schedule_time(s, "Simple", 2, 1 << 28, nodes=3) for s in (first, coarse))
    assert fine is not None and fewer is not None and fewer < 0.9 * fine


@pytest.mark.slow
def test_pairwise_allreduce_across_nodes_at_256_mib() -> None:
    """a100 x2 Allreduce at 256 MiB, 2 instances (the shipped model's): within 5% of the proved bound (0.97;
    0.63 ordered in rounds, rail's best 0.79), above NCCL's ring with 8 instances."""
    topo = _topo("a100", 2)
    coll = library.collective("allreduce", 16)
    s = build("pairwise", topo, coll)
    size = 1 << 28
    t = schedule_time(s, "Simple", 2, size, nodes=2)
    assert t is not None
    assert (bus_bandwidth("allreduce", 16, size, t) or 0.0) >= 0.95 * _bound(topo, "allreduce", size)
    ring = schedule_time(build("ring", topo, coll), "Simple", 8, size, nodes=2)
    assert ring is not None and t < ring


@pytest.mark.slow
def test_pairwise_allreduce_across_nodes_in_both_orders() -> None:
    """The replay (`pipeline.replay_time`) misjudges an Allreduce's order: on a100 x 2 in 144 chunks it takes the
    shifted rounds, which the timed run makes 150 GB/s at 64 MiB (4 instances), where the order in time runs at
    275. `pairwises` offers both orders of each piece count, and the sweep times them."""
    from smtcoll.synth.constructions.pairwise import COARSE_PIECES, pairwise, pairwises

    topo = _topo("a100", 2)
    coll = library.collective("allreduce", 16)
    offered = pairwises(topo, coll)
    rounds, timed = (pairwise(topo, coll, pieces=COARSE_PIECES, order=o) for o in ("rounds", "time"))
    assert pairwise(topo, coll, pieces=COARSE_PIECES).steps == rounds.steps  # the replay's choice
    assert any(s.steps == timed.steps for s in offered) and any(s.steps == rounds.steps for s in offered)
    assert check_schedule(timed).verdict == "ok"
    size = 64 << 20
    got = [schedule_time(s, "Simple", 4, size, nodes=2) for s in (rounds, timed)]
    assert got[0] is not None and got[1] is not None and got[1] < 0.6 * got[0]


@pytest.mark.slow
def test_lanes_on_dgx2_feeds_every_nic_and_beats_rail() -> None:
    """dgx2 x2 Allreduce (the odd GPUs send, the even ones receive): every NIC carries the same pieces, every
    rank collects one block, the broadcasts split with a partner so that the ports' egress stays within 7%;
    at 1 GiB, one instance, 0.92 of the tight bound (rail's best, with 8 instances: 0.87)."""
    topo = _topo("dgx2", 2)
    s = build("lanes", topo, library.collective("allreduce", 32))
    assert check_schedule(s).verdict == "ok"
    crossing = Counter((x.src, x.dst) for st in s.steps for x in st.sends if x.src // 16 != x.dst // 16)
    assert {src for src, _ in crossing} == set(range(1, 32, 2))  # every NIC's sender
    assert len(set(crossing.values())) == 1  # evenly
    inside = Counter(x.src for st in s.steps for x in st.sends if x.src // 16 == x.dst // 16)
    # a broadcast's origin sends 8 of a piece's 15, its partner 7: 31 against 29 sends per rank and piece
    assert max(inside.values()) * 29 <= min(inside.values()) * 31
    t = schedule_time(s, "Simple", 1, GIB, nodes=2)
    assert t is not None
    assert (bus_bandwidth("allreduce", 32, GIB, t) or 0.0) >= 0.9 * _bound(topo, "allreduce")


def test_lanes_applies_where_pairwise_does_not() -> None:
    with pytest.raises(ModelError, match="every rank has a rail"):
        build("lanes", _topo("a100", 2), library.collective("allreduce", 16))
    with pytest.raises(ModelError, match="two nodes"):
        build("lanes", _topo("dgx2", 3), library.collective("allreduce", 48))
    with pytest.raises(ModelError, match="is an Allreduce"):
        build("lanes", _topo("dgx2", 2), library.collective("allgather", 32))


def test_lanes_on_a_topology_file_lowers_and_beats_nccl() -> None:
    """Not tuned to the DGX-2: 8 GPUs on a 150 GB/s switch with 4 NICs of 25 GB/s
    (benchmarks/topologies/switch8-4nic.toml), two nodes: checked, lowered and verified, and at 1 GiB
    (one instance: 0.88 of the bound) over 2.5x NCCL's rings (two, through the NICs)."""
    from smtcoll import specs

    topo = specs.resolve_topology(str(Path(__file__).parents[2] / "benchmarks/topologies/switch8-4nic.toml"), 2)
    coll = library.collective("allreduce", 16)
    s = build("lanes", topo, coll)
    with tempfile.TemporaryDirectory() as d:
        summary, report = lower_to_file(s, Path(d) / "a.xml", LowerOptions())
        assert summary["written"] and report is not None and report.verdict == "ok"
    t = schedule_time(s, "Simple", 1, GIB, nodes=2)
    ring = schedule_time(build("ring", topo, coll), "Simple", 8, GIB, nodes=2)
    assert t is not None and ring is not None and 2.5 * t < ring


@pytest.mark.parametrize("kind", ["reducescatter", "reduce", "allreduce", "broadcast"])
def test_treepack_by_speed_where_speeds_per_unit_differ(kind: str) -> None:
    """specs/topologies/custom-example.toml: a switch group inside the node and a 5 GB/s link beside 10 GB/s
    ones, each one unit. Packed by units, the trees overload the slow link (0.50-0.67 of the sweep's bound
    at 1 GiB); `treepacks` also offers the packing by speed, within 2% of it. A machine whose speeds are
    proportional to its units (dgx1) gets one packing."""
    from smtcoll import specs
    from smtcoll.sweep.cost import Model
    from smtcoll.sweep.tasks import model_bound
    from smtcoll.synth.constructions.treepack import treepacks

    topo = specs.resolve_topology(str(ROOT / "specs" / "topologies" / "custom-example.toml"), 1)
    coll = library.collective(kind, 4)
    units, speeds = treepacks(topo, coll)
    bound = model_bound(topo, coll, 1, Model.load())(GIB)
    shares = []
    for s in (units, speeds):
        assert check_schedule(s).verdict == "ok"
        t = schedule_time(s, "Simple", 8, GIB)
        assert t is not None
        shares.append(bound / t)
    assert shares[0] < 0.7 and shares[1] >= 0.98
    assert len(treepacks(_topo("dgx1"), library.collective(kind, 8))) == 1


def _two_planes_toml() -> str:
    """8 GPUs, every pair linked: a 150 GB/s port per GPU (3 units of 50) of which 100 GB/s (2) reach the
    other half; inside a half 150 (the held-out dualplane8's shape, written here)."""
    lines = ['[topology]', 'name = "twoplanes8"', 'ranks = 8', 'alpha_us = 0.7', 'gbps = 50.0', 'links = [']
    lines += [f"    {{ src = {s}, dst = {d}, bandwidth = {3 if s // 4 == d // 4 else 2} }},"
              for s in range(8) for d in range(8) if s != d]
    lines.append("]")
    for r in range(8):
        peers = [x for x in range(8) if x != r]
        far = [x for x in range(8) if x // 4 != r // 4]
        for name, srcs, dsts, bw in ((f"out{r}", [r], peers, 3), (f"in{r}", peers, [r], 3),
                                     (f"outA{r}", [r], far, 2), (f"inA{r}", far, [r], 2)):
            lines += ["", "[[topology.switches]]", f"srcs = {srcs}", f"dsts = {dsts}", f"bandwidth = {bw}",
                      f'name = "{name}"']
    return "\n".join(lines) + "\n"


def test_pairwise_over_the_fastest_links_groups_where_every_pair_is_linked_at_unlike_speeds(tmp_path) -> None:
    """A message between the halves holds the slower 100 GB/s group too, and in one exchange a GPU receives
    4 such messages for 3 inside its half: two follow each other at the slower speed every round, 0.93 of
    the bound at best. With the halves as nodes (`pairwises`' added candidates) a block crosses once and is
    relayed inside the half: at least 0.98 of the bound at 1 GiB."""
    from smtcoll import specs
    from smtcoll.synth.constructions.pairwise import _planes, pairwises

    path = tmp_path / "twoplanes8.toml"
    path.write_text(_two_planes_toml())
    topo = specs.load_topology(path, 1)
    assert _planes(topo) == [0, 0, 0, 0, 1, 1, 1, 1]
    assert _planes(_topo("a100")) is None and _planes(_topo("dgx1")) is None  # one speed; not every pair
    coll = library.collective("allgather", 8)
    one, planes = pairwises(topo, coll)[0], pairwises(topo, coll)[1]
    assert check_schedule(planes).verdict == "ok"
    # a piece of a block crosses to the other half once, to its rail, and is relayed there
    crossing = Counter((x.chunk, x.dst // 4) for st in planes.steps for x in st.sends if x.src // 4 != x.dst // 4)
    assert set(crossing.values()) == {1}
    bound = _bound(topo, "allgather", GIB)
    times = [schedule_time(s, "Simple", 2, GIB) for s in (one, planes)]
    got = [bus_bandwidth("allgather", 8, GIB, t) or 0.0 for t in times if t is not None]
    assert len(got) == 2 and got[0] <= 0.94 * bound and got[1] >= 0.98 * bound


def _two_planes_with_nics(tmp_path: Path) -> Path:
    """`_two_planes_toml` with a 50 GB/s NIC per half (held-out dualplane8), written into tmp_path."""
    nics = "".join(f"\n[[topology.nics]]\nsenders = {h}\nreceivers = {h}\nbandwidth = 1\nrail = {i}\n"
                   f"alpha_us = 2.0\ngbps = 50.0\n" for i, h in enumerate(([0, 1, 2, 3], [4, 5, 6, 7])))
    path = tmp_path / "twoplanes8.toml"
    path.write_text(_two_planes_toml() + nics)
    return path


def test_pairwise_over_the_planes_of_several_nodes(tmp_path) -> None:
    """Two such nodes, a 50 GB/s NIC per half (the held-out dualplane8 x 2): with the nodes as the exchange's
    groups a GPU relays 4 of its 7 messages across the halves and the run ends on the cross-half links (0.85 of
    the bound for Allgather at 256 MiB). Over the planes of the nodes (`_grid`, offered by `pairwises`) a
    piece crosses each NIC and each node's halves once per node it reaches: 0.89."""
    from smtcoll import specs
    from smtcoll.synth.constructions.pairwise import _grid, pairwise, pairwises

    path = _two_planes_with_nics(tmp_path)
    topo = specs.load_topology(path, 2)
    assert _grid(topo) == [g for g in range(4) for _ in range(4)]
    assert _grid(specs.load_topology(path, 1)) is None and _grid(_topo("a100", 2)) is None  # one node; one speed
    coll = library.collective("allgather", 16)
    grid = pairwise(topo, coll, grid=True)
    assert grid in pairwises(topo, coll)
    assert check_schedule(grid).verdict == "ok"
    # each piece enters every other node once (through its plane's NIC) and every half of a node once
    for cut in (lambda r: r // 8, lambda r: r // 4):
        entries = Counter((x.chunk, cut(x.dst)) for st in grid.steps for x in st.sends if cut(x.src) != cut(x.dst))
        assert set(entries.values()) == {1}
    bound, size = _bound(topo, "allgather", 1 << 28), 1 << 28
    nodes = pairwise(topo, coll)
    times = [schedule_time(s, "Simple", 2, size, nodes=2) for s in (nodes, grid)]
    got = [bus_bandwidth("allgather", 16, size, t) or 0.0 for t in times if t is not None]
    assert len(got) == 2 and got[0] <= 0.86 * bound and got[1] >= 0.88 * bound


@pytest.mark.slow
def test_pairwise_allreduce_sums_over_the_nodes_and_spreads_over_the_planes(tmp_path) -> None:
    """The Allreduce over the planes of dualplane8 x 2: each partial sum crosses a node's NIC once, straight from
    its rail to the owner (a sum waits at every hop of its way), and each finished piece then enters every
    other plane once; at 256 MiB, 2 instances, 0.91 of the bound against 0.855 over the nodes alone (at 4, the
    sweep's pick, 0.94 against 0.87: docs/benchmarks.md; timing 4 was 70% of this test)."""
    from smtcoll import specs
    from smtcoll.synth.constructions.pairwise import COARSE_PIECES, pairwise, pairwises

    path = _two_planes_with_nics(tmp_path)
    topo = specs.load_topology(path, 2)
    coll = library.collective("allreduce", 16)
    grid, nodes = pairwise(topo, coll, grid=True, order="rounds"), pairwise(topo, coll, pieces=COARSE_PIECES)
    assert any(s.steps == grid.steps for s in pairwises(topo, coll))
    assert check_schedule(grid).verdict == "ok"
    across = Counter(x.chunk for st in grid.steps for x in st.sends if x.src // 8 != x.dst // 8)
    assert set(across.values()) == {2}  # a partial sum over, the sum back
    bound, size = _bound(topo, "allreduce", 1 << 28), 1 << 28
    times = [schedule_time(s, "Simple", 2, size, nodes=2) for s in (nodes, grid)]
    got = [bus_bandwidth("allreduce", 16, size, t) or 0.0 for t in times if t is not None]
    assert len(got) == 2 and got[0] <= 0.87 * bound and got[1] >= 0.9 * bound


@pytest.mark.slow
def test_pairwise_reducescatter_over_the_planes_wins_at_1_gib(tmp_path) -> None:
    """The ReduceScatter over the planes of dualplane8 x 2: a partial sum first joins its rail's in the owner's
    plane of its node, so each piece of a block crosses a NIC once, summed over both planes of the other node; at
    1 GiB, one instance, 0.89 of the bound against 0.84 over the nodes (at 256 MiB its waits at every hop lose:
    the sweep gets both and takes the faster at each size)."""
    from smtcoll import specs
    from smtcoll.synth.constructions.pairwise import pairwise, pairwises

    topo = specs.load_topology(_two_planes_with_nics(tmp_path), 2)
    coll = library.collective("reducescatter", 16)
    grid, nodes = pairwise(topo, coll, grid=True), pairwise(topo, coll)
    assert any(s.steps == grid.steps for s in pairwises(topo, coll))
    assert check_schedule(grid).verdict == "ok"
    # per address one partial sum crosses the NIC (the other node's, both planes summed), and each of the 3
    # other planes' partial sums leaves its plane once
    for cut, crossings in ((lambda r: r // 8, {1}), (lambda r: r // 4, {3})):
        across = Counter(x.chunk for st in grid.steps for x in st.sends if cut(x.src) != cut(x.dst))
        assert set(across.values()) == crossings
    bound, size = _bound(topo, "reducescatter", GIB), GIB
    times = [schedule_time(s, "Simple", 1, size, nodes=2) for s in (nodes, grid)]
    got = [bus_bandwidth("reducescatter", 16, size, t) or 0.0 for t in times if t is not None]
    assert len(got) == 2 and got[0] <= 0.86 * bound and got[1] >= 0.88 * bound


def test_pairwise_allreduce_over_the_groups_also_in_larger_pieces(tmp_path) -> None:
    """Each message pays a hop latency: at 256 MiB the Allreduce over the halves in 192 chunks reaches 0.93 of
    the sweep's bound, and `pairwises` also offers it in fewer, larger pieces (COARSE_PIECES), which reach
    0.98; at 1 GiB both are near the bound."""
    from smtcoll import specs
    from smtcoll.sweep.cost import Model
    from smtcoll.sweep.tasks import model_bound
    from smtcoll.synth.constructions.pairwise import pairwises

    path = tmp_path / "twoplanes8.toml"
    path.write_text(_two_planes_toml())
    topo = specs.load_topology(path, 1)
    coll = library.collective("allreduce", 8)
    _, many, coarse, *direct = pairwises(topo, coll)
    assert [s.collective.chunk_factor for s in direct] == [many.collective.chunk_factor] * 3  # 1, 2, 4 direct
    assert check_schedule(coarse).verdict == "ok"
    assert coarse.collective.chunk_factor < many.collective.chunk_factor
    bound = model_bound(topo, coll, 1, Model.load())

    def share(s: Schedule, size: int) -> float:
        times = [schedule_time(s, "Simple", i, size) for i in (1, 2)]
        return float(bound(size)) / float(min(t for t in times if t is not None))

    mib256 = 1 << 28
    assert share(many, mib256) < 0.95 <= 0.97 <= share(coarse, mib256)
    assert share(coarse, GIB) >= 0.98


def test_where_the_nics_have_time_to_spare_some_pieces_cross_them_first() -> None:
    """Held-out h100 x 2 (a 50 GB/s NIC per GPU, 450 GB/s NVSwitch ports): relayed across one NIC a piece costs a
    rank 2 x 7 messages in its node for 1 across, so the ports are the bottleneck and the NICs run a third idle.
    A piece sent across the NICs first (`_reduce_direct`, `_gather_direct`: 7 in the node for 8 across) shifts
    that work; one such piece of 24 takes the Allreduce at 256 MiB (2 instances) from 0.875 to 0.94 of the
    bound, one of 18 to 0.97. a100 x 2 (25 GB/s NICs, 300 GB/s ports) has no time to spare on its NICs: none offered."""
    from smtcoll import specs
    from smtcoll.sweep.cost import Model
    from smtcoll.sweep.tasks import model_bound
    from smtcoll.synth.constructions.pairwise import _Layout, direct_pieces, pairwise, pairwises

    topo = specs.resolve_topology(str(ROOT / "benchmarks" / "topologies" / "heldout" / "h100.toml"), 2)
    coll = library.collective("allreduce", 16)
    assert direct_pieces(topo, _Layout(topo), 24) == 1
    offered = pairwises(topo, coll)
    # the plain and the coarse, each in both orders, and one direct piece of 24 and of 18 (half the pieces)
    assert [s.collective.chunk_factor for s in offered] == [384, 384, 144, 144, 384, 288]
    one = pairwise(topo, coll, direct=1)
    assert one.collective == offered[4].collective and one.steps == offered[4].steps
    assert check_schedule(one).verdict == "ok"
    crossings = [x for st in one.steps for x in st.sends if x.src // 8 != x.dst // 8]
    plain = pairwise(topo, coll)
    assert len(crossings) > len([x for st in plain.steps for x in st.sends if x.src // 8 != x.dst // 8])
    model = Model.load()
    size = 256 << 20
    bound = model_bound(topo, coll, 1, model)(size)
    t, before = schedule_time(one, "Simple", 2, size, model), schedule_time(plain, "Simple", 2, size, model)
    assert t is not None and before is not None
    assert bound / before < 0.9 and bound / t > 0.93
    a100 = _topo("a100", 2)
    assert direct_pieces(a100, _Layout(a100), 24) == 0 and len(pairwises(a100, coll)) == 4
    half = offered[5]  # fewer messages: 0.97 at 256 MiB
    t = schedule_time(half, "Simple", 2, size, model)
    assert t is not None and bound / t > 0.96
