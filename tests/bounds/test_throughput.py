"""The physical time bound T(B) >= us_per_byte * B: the targets of issue 23, soundness against every
schedule the checker accepts (timed with links running in parallel at their speeds), and certificates
that `smtcoll proof check` re-checks exactly and rejects when any number in them changes."""

from __future__ import annotations

import copy
import json
from fractions import Fraction
from pathlib import Path

import pytest
from helpers.paths import ROOT
from helpers.random_schedules import accepted_combining_schedules, accepted_schedules
from hypothesis import HealthCheck, given, settings

from smtcoll import library
from smtcoll.bounds.demand import address_transfers
from smtcoll.bounds.throughput import TransfersCertificate, addresses, cut_rate, rates, time_bound
from smtcoll.model import Link, Schedule, Topology
from smtcoll.proofs import check_certificate
from smtcoll.proofs.throughput import write_throughput_certificate

GIB = 1 << 30


def bound(topology: str, collective: str, nodes: int = 1, root: int | None = None):
    topo = library.topology(topology, nodes)
    coll = library.collective(collective, topo.ranks, root, 1)
    return topo, coll, time_bound(topo, coll)


# --- the targets ------------------------------------------------------------------------------------

def test_ndv2_allreduce_proves_150_bus_gbps_from_2n_minus_2_transfers():
    _, _, b = bound("ndv2", "allreduce")
    assert b.busbw_gbps(GIB) == 150  # exact: the NCCL ring's bandwidth, so also the tightest possible
    assert b.certificate is not None and b.certificate.kind == "transfers"
    assert b.certificate.transfers == 14  # 2(N-1) per address
    assert b.us_per_byte == Fraction(14, 1_200_000)  # 14 buffers through 8 x 150 GB/s of ingress


@pytest.mark.parametrize("collective", ["allreduce", "allgather", "reducescatter"])
def test_ndv2_two_nodes_23_4375_bus_gbps_through_the_nic(collective):
    _, _, b = bound("ndv2", collective, nodes=2)
    assert b.busbw_gbps(GIB) == Fraction(375, 16)
    assert b.certificate is not None and b.certificate.kind == "cut"
    assert b.certificate.inside == tuple(range(8)) and b.certificate.rate == 12_500  # one 12.5 GB/s NIC


def test_allreduce_across_a_ring_of_nodes_counts_gossip_between_nodes():
    # ndv2 x4: the four nodes need 2(4-1) = 6 buffer transfers between them, through 4 NICs of 12.5 GB/s
    _, _, b = bound("ndv2", "allreduce", nodes=4)
    assert b.algbw_gbps(GIB) == Fraction(25, 3)  # the ring of nodes (1.5 buffers through each NIC) reaches it
    assert b.certificate is not None and b.certificate.kind == "transfers"
    assert b.certificate.parts == tuple(tuple(range(i, i + 8)) for i in range(0, 32, 8))


def test_allreduce_across_three_nodes_counts_gossip_between_the_nodes_not_only_a_cut():
    # ndv2 x3: 2(3-1) = 4 buffer transfers between the nodes through 3 NICs of 12.5 GB/s (4/3 buffers per
    # NIC); the cut around one node proves only 1 buffer, 3/4 of it (block counts that are not powers of 2)
    _, _, b = bound("ndv2", "allreduce", nodes=3)
    assert b.algbw_gbps(GIB) == Fraction(75, 8)
    assert b.certificate is not None and b.certificate.kind == "transfers"
    assert b.certificate.parts == tuple(tuple(range(i, i + 8)) for i in range(0, 24, 8))


def test_allgather_cut_around_a_node_of_three_with_two_nics_each(tmp_path: Path):
    # a DGX-1 with two 12.5 GB/s NICs (GPUs 0 -> 1 and 4 -> 5), 3 nodes: 2/3 of the buffer enters a node
    # through 25 GB/s; no ball around a rank is a node, so the cut needs the node blocks of 3
    from smtcoll.specs import load_topology

    nic = 'alpha_us = 2.6\ngbps = 12.5\n'
    (tmp_path / "t.toml").write_text('[topology]\nname = "dgx1-2nic"\ngenerator = "dgx1"\n'
                                     f'[[topology.nics]]\nsenders = [0]\nreceivers = [1]\n{nic}'
                                     f'[[topology.nics]]\nsenders = [4]\nreceivers = [5]\n{nic}')
    topo = load_topology(tmp_path / "t.toml", 3)
    coll = library.collective("allgather", 24, None, 1)
    b = time_bound(topo, coll)
    assert b.algbw_gbps(GIB) == Fraction(75, 2)  # 25 GB/s over 2/3 of the buffer (was 156.5: one rank's cut)
    assert b.certificate is not None and b.certificate.kind == "cut"
    assert check_certificate(write_throughput_certificate(topo, coll, tmp_path)).verdict == "ok"


@pytest.mark.slow  # a few CPU seconds, more wall-clock on a loaded machine
def test_per_rank_ingress_with_switch_groups_and_nics():
    # a100 x2: 300 GB/s of NVSwitch port plus one 25 GB/s NIC into each GPU
    _, _, b = bound("a100", "allgather", nodes=2)
    assert b.busbw_gbps(GIB) == 325
    # dgx2: the switch group of a rank's port caps its 15 links of 125 GB/s each at 125 GB/s in all
    _, _, b = bound("dgx2", "allgather")
    assert b.busbw_gbps(GIB) == 125


def two_switches_of_three() -> Topology:
    """Held-out sw2x3: 6 GPUs on 2 switches of 3, a port per GPU each way (out-port, in-port, in file
    order per rank), the switches joined by a bridge of 2 listed last. 50 GB/s per unit."""
    from smtcoll.model import SwitchGroup

    links = [Link(s, d, 1, gbps=50.0) for s in range(6) for d in range(6) if s != d]
    groups = []
    for v in range(6):
        others = [x for x in range(6) if x != v]
        groups += [SwitchGroup([v], others, 1, f"out{v}"), SwitchGroup(others, [v], 1, f"in{v}")]
    groups += [SwitchGroup([0, 1, 2], [3, 4, 5], 2, "bridge01"), SwitchGroup([3, 4, 5], [0, 1, 2], 2, "bridge10")]
    return Topology("sw2x3", 6, links, groups)


def test_a_rank_in_port_bounds_its_ingress_whatever_the_file_order_of_its_groups():
    """Charging each crossing link to its first or last group (file order) put rank 3's links from 0-2 on
    the bridge and from 4-5 on their out-ports: 200 GB/s into a GPU whose port takes 50, so the Allreduce
    bound was 83.3 bus GB/s where the ring reaches 50 and nothing does better."""
    topo = two_switches_of_three()
    coll = library.collective("allreduce", 6, None, 1)
    r = rates(topo)
    assert [cut_rate(topo, r, {v}) for v in range(6)] == [50_000] * 6  # bytes/us: one port each
    assert cut_rate(topo, r, {0, 1, 2}) == 100_000  # the bridge
    b = time_bound(topo, coll)
    assert b.busbw_gbps(GIB) == 50 and b.certificate is not None and b.certificate.kind == "transfers"


def test_a_fat_tree_nodes_nics_bound_what_enters_it_not_the_leaf_uplinks():
    """Held-out fattree4x4 (4 nodes of 4 GPUs, a 25 GB/s NIC each, two nodes a leaf, 100 GB/s of uplinks a
    leaf): every link into a node goes through one of the node's 4 NIC groups. The widest group of a link from
    the other leaf is its uplinks, so the fixed charges gave 175 GB/s into a node and an Allreduce bound of
    187.5 bus GB/s that no schedule reaches; the cover gives 100, and the gossip between the 4 nodes 125 GB/s,
    which `pairwise`'s ring of the nodes reaches within 2% in the sweep's model."""
    from smtcoll import specs
    from smtcoll.bounds.throughput import _cover

    topo = specs.resolve_topology(str(ROOT / "benchmarks" / "topologies" / "heldout" / "fattree4x4.toml"))
    r = rates(topo)
    assert cut_rate(topo, r, {0, 1, 2, 3}) == 100_000
    b = time_bound(topo, library.collective("allreduce", 16, None, 1))
    assert b.busbw_gbps(GIB) == 125 and b.certificate is not None and b.certificate.kind == "transfers"
    # the cover alone: one 2-unit group over two links of 3 beats charging them to themselves
    assert _cover([0, 1], [[0], [0]], [3, 3], [Fraction(2)]) == 2
    assert _cover([0, 1], [[0], []], [3, 3], [Fraction(5)]) == 6  # a group slower than its links is not taken


def test_a_nic_shared_by_four_gpus_counts_once_in_the_total(tmp_path: Path):
    """Held-out dualplane8 x 2: each NIC serves four GPUs of 150 GB/s ports. The sum of the GPUs' ingresses
    counts a shared NIC four times (200 GB/s a GPU); all the links at once carry 16 x 150 + 4 x 50 = 2600 GB/s,
    so an Allreduce's 30 buffer transfers bound it at 162.5 bus GB/s (was 187.5, the node cut). The
    certificate names the side and fails with its rate changed. sw2x3 x 2 the same way."""
    from smtcoll import specs

    topo = specs.resolve_topology(str(ROOT / "benchmarks" / "topologies" / "heldout" / "dualplane8.toml"), 2)
    coll = library.collective("allreduce", 16, None, 1)
    b = time_bound(topo, coll)
    assert b.busbw_gbps(GIB) == Fraction(325, 2)
    assert isinstance(b.certificate, TransfersCertificate) and b.certificate.side == "total"
    assert b.certificate.rate == 2_600_000
    path = write_throughput_certificate(topo, coll, tmp_path)
    assert check_certificate(path).verdict == "ok"
    data = json.loads(path.read_text())
    data["witness"]["rate_bytes_per_us"] = "2700000"
    path.write_text(json.dumps(data))
    assert check_certificate(path).verdict == "error"
    # three GPUs a 25 GB/s NIC, two 3-GPU switches joined by a 100 GB/s bridge: 12 x 50 + 4 x 25 GB/s
    topo = specs.resolve_topology(str(ROOT / "benchmarks" / "topologies" / "heldout" / "sw2x3.toml"), 2)
    b = time_bound(topo, library.collective("allreduce", 12, None, 1))
    assert b.busbw_gbps(GIB) == Fraction(175, 3)
    assert isinstance(b.certificate, TransfersCertificate) and b.certificate.rate == 700_000


def test_latency_part_and_the_combination_is_the_max():
    _, _, b = bound("ndv2", "allreduce")
    assert b.steps == 2 and b.alpha_us == Fraction(7, 10)
    assert b.at(1) == Fraction(14, 10)  # a tiny call: the latency part
    assert b.at(GIB) == b.us_per_byte * GIB


@pytest.mark.slow  # a few CPU seconds, more wall-clock on a loaded machine
def test_alltoall_answers_fast_on_the_issue_machines():
    # issue 24: `bounds` took 21.6 s (ndv2 x4) and 48.4 s (a100 x2) on Alltoall
    _, _, b = bound("a100", "alltoall", nodes=2)
    assert b.algbw_gbps(GIB) == 50  # 4 buffers must cross 8 NICs of 25 GB/s


def test_address_transfers_per_collective():
    for coll_name, root, want in (("allreduce", None, 2 * 7), ("reduce", 0, 7), ("reducescatter", None, 8 * 7),
                                  ("broadcast", 0, 7), ("allgather", None, 8 * 7)):
        topo = library.topology("fully-connected:8")
        coll = library.collective(coll_name, 8, root, 1)
        assert address_transfers(coll, topo) == want, coll_name


# --- soundness: no schedule the checker accepts is faster --------------------------------------------

def physical_time(schedule: Schedule, size: int) -> Fraction:
    """Steps one after the other; inside a step every link and switch group runs at its own rate."""
    topo, coll = schedule.topology, schedule.collective
    r = rates(topo)
    chunk = Fraction(size, addresses(coll))
    index = {(l.src, l.dst): e for e, l in enumerate(topo.links)}
    total = Fraction(0)
    for step in schedule.steps:
        load = [0] * len(topo.links)
        for s in step.sends:
            load[index[(s.src, s.dst)]] += 1
        times = [n * chunk / r.link[e] for e, n in enumerate(load)]
        times += [sum(load[e] for e in ms) * chunk / r.group[g] for g, ms in enumerate(r.members)]
        total += max(times, default=Fraction(0))
    return total


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(accepted_schedules(max_ranks=4, max_steps=3))
def test_no_accepted_schedule_beats_the_time_bound(schedule):
    b = time_bound(schedule.topology, schedule.collective)
    assert physical_time(schedule, 1 << 20) >= b.us_per_byte * (1 << 20)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(accepted_combining_schedules(max_ranks=4, max_steps=3))
def test_no_accepted_combining_schedule_beats_the_time_bound(schedule):
    b = time_bound(schedule.topology, schedule.collective)
    assert physical_time(schedule, 1 << 20) >= b.us_per_byte * (1 << 20)
    # and the transfers bound counts no more sends than the schedule makes
    assert sum(len(s.sends) for s in schedule.steps) >= address_transfers(schedule.collective, schedule.topology)


# --- certificates ---------------------------------------------------------------------------------

def lp_beats_cuts() -> Topology:
    """7 ranks where the Alltoall flow LP is 10% above every cut (found by a random search)."""
    edges = [(0, 1, 2), (0, 6, 1), (1, 0, 1), (1, 2, 2), (1, 4, 2), (1, 5, 2), (2, 1, 1), (2, 3, 1), (2, 5, 1),
             (3, 2, 1), (3, 4, 2), (4, 1, 1), (4, 3, 1), (4, 5, 1), (5, 1, 1), (5, 2, 2), (5, 4, 1), (5, 6, 2),
             (6, 0, 1), (6, 5, 1)]
    return Topology("lp7", 7, [Link(s, d, b) for s, d, b in edges])


def numbers(data, path=()):
    """Every number in a JSON value (fractions written as strings too), with its path."""
    if isinstance(data, dict):
        for k, v in data.items():
            yield from numbers(v, (*path, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from numbers(v, (*path, i))
    else:
        is_number = isinstance(data, int | float) and not isinstance(data, bool)
        if is_number or (isinstance(data, str) and data.replace("/", "").isdigit()):
            yield path, data


def changed(value):
    if isinstance(value, str):
        return str(Fraction(value) + Fraction(1, 7))
    return value + 1


def put(data, path, value):
    for k in path[:-1]:
        data = data[k]
    data[path[-1]] = value


@pytest.mark.parametrize(("topology", "collective", "nodes", "kind"), [
    ("ndv2", "allreduce", 1, "transfers"), ("ndv2", "allgather", 2, "cut"), (None, "alltoall", 1, "lengths"),
    ("ndv2", "allreduce", 4, "transfers"), ("ndv2", "allreduce", 3, "transfers")])
def test_certificate_checks_and_fails_when_any_number_changes(tmp_path: Path, topology, collective, nodes, kind):
    topo = lp_beats_cuts() if topology is None else library.topology(topology, nodes)
    coll = library.collective(collective, topo.ranks, None, 1)
    path = write_throughput_certificate(topo, coll, tmp_path)
    assert check_certificate(path).verdict == "ok"
    data = json.loads(path.read_text())
    assert data["witness"]["bound"] == kind
    targets = [(p, v) for p, v in numbers({"claim": data["claim"], "witness": data["witness"]})]
    assert len(targets) >= 3
    for p, v in targets:
        bad = copy.deepcopy(data)
        put(bad, p, changed(v))
        path.write_text(json.dumps(bad))
        r = check_certificate(path)
        assert r.verdict == "error", (p, r.messages)


def test_lp_certificate_is_stronger_than_every_cut():
    topo = lp_beats_cuts()
    coll = library.collective("alltoall", 7, None, 1)
    b = time_bound(topo, coll)
    assert b.certificate is not None and b.certificate.kind == "lengths"
    from smtcoll.bounds.throughput import best_cut

    cut = best_cut(topo, coll, rates(topo))
    assert cut is not None and b.us_per_byte > cut.us_per_byte


def test_certificate_with_an_edited_topology_fails(tmp_path: Path):
    topo = library.topology("ndv2", 2)
    coll = library.collective("allgather", 16, None, 1)
    path = write_throughput_certificate(topo, coll, tmp_path)
    data = json.loads(path.read_text())
    data["topology"]["links"][0]["gbps"] = 400.0
    path.write_text(json.dumps(data))
    assert check_certificate(path).verdict == "error"


# --- CLI ----------------------------------------------------------------------------------------------

@pytest.mark.slow  # a few CPU seconds, more wall-clock on a loaded machine
def test_cli_size_json_and_certificate(cli, tmp_path: Path):
    out = cli("bounds", "-t", "ndv2", "-c", "allreduce", "--size", "1GiB", "--format", "json",
              "--certificate", str(tmp_path))
    assert out.returncode == 0, out.stderr
    tb = json.loads(out.stdout)["time_bound"]
    assert tb["busbw_gbps"] == 150.0 and tb["size"] == GIB and tb["us_per_byte"] == "7/600000"
    checked = cli("proof", "check", tb["certificate_file"])
    assert checked.returncode == 0, checked.stdout


def test_cli_rejects_a_bad_size(cli):
    out = cli("bounds", "-t", "ndv2", "-c", "allreduce", "--size", "1XB")
    assert out.returncode == 2 and "--size" in out.stderr and "Traceback" not in out.stderr


def test_no_schedule_exists_is_an_answer_not_an_error(cli, tmp_path: Path):
    spec = tmp_path / "split.toml"
    spec.write_text('[topology]\nname = "split"\nranks = 4\nlinks = [{src = 0, dst = 1}, {src = 1, dst = 0}]\n')
    out = cli("bounds", "-t", str(spec), "-c", "allgather", "--format", "json")
    assert out.returncode == 0, out.stderr
    tb = json.loads(out.stdout)["time_bound"]
    assert tb["certificate"] is None and tb["witness"].startswith("no schedule exists")


@pytest.mark.slow  # two syntheses
@pytest.mark.parametrize(("collective", "chunks"), [("allreduce", 48), ("allgather", 6)])
def test_the_bound_is_tight_on_ndv2_a_synthesized_schedule_reaches_it(cli, tmp_path: Path, collective, chunks):
    # the ring the engine builds (Allreduce (14, 14, 48), Allgather over the 6 rings), timed with every
    # link at its own speed: exactly the proved 150 GB/s of bus bandwidth, so the bound cannot be raised
    out = tmp_path / "s.json"
    r = cli("synth", "-t", "ndv2", "-c", collective, "--chunks", str(chunks), "--method", "scale", "-o", str(out))
    assert r.returncode == 0, r.stderr
    from smtcoll import load_schedule

    s = load_schedule(out)
    b = time_bound(s.topology, s.collective)
    assert physical_time(s, GIB) == b.at(GIB) and b.busbw_gbps(GIB) == 150


def test_rooted_cuts_sink_sides_match_networkx_minimum_cut():
    """The rooted cuts' max-flows moved to scipy (a 72-GPU switch: 11 -> 2 CPU s); the rank sets they pick
    are those of networkx's minimum cut (both: what the source cannot reach in the residual network)."""
    import networkx as nx

    from smtcoll.bounds.network import flow_network
    from smtcoll.bounds.throughput import _sink_side

    topo = library.topology("dgx2", 2)
    net = flow_network(topo, lambda l: float(l.gbps or l.bandwidth), lambda g: 125.0 * g.bandwidth)
    for s, t in ((0, 1), (0, 17), (20, 0), (5, 30)):
        _, (_, theirs) = nx.minimum_cut(net, s, t)
        assert _sink_side(net, s, t) == set(theirs)
