"""Lower bounds: the step counts and ForestColl's throughput numbers of peers.md, witnesses a reader can
check, and soundness (no schedule the checker accepts beats a bound)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.random_schedules import accepted_schedules
from hypothesis import HealthCheck, given, settings

from smtcoll import library
from smtcoll.bounds import check_witness, lower_bounds, min_rounds, min_steps, throughput_bound

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "smtcoll", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


def bounds(topology: str, collective: str, nodes: int = 1, **kw):
    topo = library.topology(topology, nodes)
    coll = library.collective(collective, topo.ranks, kw.pop("root", None), kw.pop("chunks", 1))
    return topo, coll, lower_bounds(topo, coll, **kw)


# --- peers.md: step counts -------------------------------------------------------------------------

def test_star8_allgather_needs_7_steps_of_one_round():
    _, _, b = bounds("star:8", "allgather")
    assert b.rounds.value == 7 and b.receive.value == 7
    w = b.receive.witness
    assert w["rank"] != 0 and w["must_receive"] == 7 and w["capacity"] == 1
    assert w["links"] == [{"src": 0, "dst": w["rank"], "capacity": 1}]


def test_hub_and_spoke8_allgather_needs_7_through_its_switch_port():
    _, _, b = bounds("hub-and-spoke:8", "allgather")
    assert b.steps.value == 1 and b.rounds.value == 7
    assert [g["capacity"] for g in b.receive.witness["switch_groups"]] == [1]


def test_line8_alltoall_needs_16_rounds_through_the_middle_link():
    _, _, b = bounds("line:8", "alltoall")
    assert b.rounds.value == 16 and b.cut.value == 16
    w = b.cut.witness
    assert w["must_enter"] == 16 and w["capacity"] == 1
    assert w["inside"] in ([0, 1, 2, 3], [4, 5, 6, 7])


def test_torus4x4_allgather_needs_4_steps():
    _, _, b = bounds("torus2d:4x4", "allgather")
    assert b.steps.value == 4
    w = b.steps.witness
    assert w["distance"] == 4 and len(w["shortest_path"]) == 5
    assert w["shortest_path"][0] in w["holders"] and w["shortest_path"][-1] == w["rank"]


def test_dgx1_allgather():
    _, _, b = bounds("dgx1", "allgather", chunks=6)
    assert b.steps.value == 2 and b.rounds.value == 7
    assert b.rounds_per_chunk.witness["exact"] == "7/6"
    assert b.lp.value == 7


def test_ring8_alltoall_needs_8_rounds_by_the_flow_lp():
    _, _, b = bounds("ring:8", "alltoall")
    assert b.lp.value == 8  # 128 chunk-hops over 16 directed links (peers.md)


def test_min_steps_and_rounds_for_synthesis():
    topo, coll = library.topology("star:8"), library.collective("allgather", 8)
    assert min_steps(topo, coll) == 2 and min_rounds(topo, coll) == 7
    disconnected = library.topology("line:4").compose(1)
    assert min_steps(disconnected, library.collective("allgather", 4)) == 3


# --- peers.md: ForestColl's Allgather throughput ----------------------------------------------------

@pytest.mark.parametrize("topology,nodes,gbps,expected", [
    ("dgx1", 1, None, 171.4), ("torus2d:4x4", 1, 50.0, 213.3), ("mesh2d:4x4", 1, 50.0, 106.7),
    ("a100", 2, None, 346.7),
])
def test_forestcoll_throughput(topology, nodes, gbps, expected):
    topo = library.topology(topology, nodes)
    b = throughput_bound(topo, library.collective("allgather", topo.ranks), gbps)
    assert round(b.value, 1) == expected
    w = b.witness
    crossing = sum(x["capacity"] for x in w["links"]) + sum(x["capacity"] for x in w["switch_groups"])
    assert crossing == pytest.approx(w["capacity_out"])
    assert b.value == pytest.approx(topo.ranks * w["capacity_out"] / w["shares_that_must_leave"])


def test_a100_two_nodes_bottleneck_is_one_gpu_nvswitch_plus_nic():
    topo = library.topology("a100", 2)
    w = throughput_bound(topo, library.collective("allgather", 16)).witness
    assert sorted(g["capacity"] for g in w["switch_groups"]) == [25.0, 300.0] and w["shares_that_must_leave"] == 15


def test_reducescatter_throughput_is_allgathers_on_the_reversed_topology():
    topo = library.topology("dgx1")
    assert round(throughput_bound(topo, library.collective("reducescatter", 8)).value, 1) == 171.4


def test_throughput_does_not_apply_to_alltoall():
    b = throughput_bound(library.topology("dgx1"), library.collective("alltoall", 8))
    assert b.value is None and "Allgather" in b.note


@pytest.mark.slow
def test_forestcoll_torus16x16():
    topo = library.topology("torus2d:16x16")
    assert round(throughput_bound(topo, library.collective("allgather", 256), 50.0).value, 1) == 200.8


# --- time --------------------------------------------------------------------------------------------

def test_time_bound_is_alpha_beta_of_the_least_steps_and_rounds():
    _, _, b = bounds("dgx1", "allgather", chunks=6, size=8 * 6 * 1000)
    w = b.time.witness
    assert w["steps"] == 2 and w["rounds"] == 7 and w["alpha_us"] == 0.7 and w["gbps_per_unit"] == 25.0
    assert w["chunk_bytes"] == 1000  # 48 chunks in one rank's output buffer
    assert b.time.value == pytest.approx(2 * 0.7 + 7 * 1000 / 25e3)


def test_time_needs_a_size_and_timing():
    _, _, b = bounds("ring:4", "allgather", size=1000)
    assert b.time.value is None and "--gbps-per-unit" in b.time.note
    _, _, b = bounds("ring:4", "allgather", size=1000, gbps_per_unit=10.0, alpha_us=1.0)
    assert b.time.value == pytest.approx(2 * 1.0 + 2 * 250 / 10e3)


# --- witnesses and soundness ---------------------------------------------------------------------

def test_witnesses_recheck():
    for name, coll_name in (("torus2d:4x4", "allgather"), ("line:8", "alltoall"), ("star:8", "allgather"),
                            ("dgx2", "allgather"), ("dgx1", "allreduce")):
        topo, coll, b = bounds(name, coll_name, lp=False)
        for kind in ("steps", "receive", "cut"):
            bound = getattr(b, kind)
            assert check_witness(kind, bound.witness, topo, coll) == bound.value, (name, kind)


def test_unreachable_rank_means_no_schedule():
    topo = library.topology("line:3")
    from smtcoll.model import Topology
    cut = Topology("cut", 3, [l for l in topo.links if (l.src, l.dst) != (1, 2)])
    b = lower_bounds(cut, library.collective("allgather", 3))
    assert b.steps.value is None and "no schedule exists" in b.steps.note
    assert b.rounds.value is None


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(accepted_schedules(max_ranks=4, max_steps=3))
def test_no_accepted_schedule_beats_a_bound(schedule):
    b = lower_bounds(schedule.topology, schedule.collective)
    assert len(schedule.steps) >= b.steps.value
    assert schedule.rounds >= b.rounds.value
    if b.lp.value is not None:
        assert schedule.rounds >= b.lp.witness["lp_optimum"] - 1e-6


# --- CLI -------------------------------------------------------------------------------------------

def test_cli_json_contract():
    out = cli("bounds", "-t", "dgx1", "-c", "allgather", "--chunks", "6", "--size", "48000", "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    for key in ("steps", "rounds", "receive", "cut", "lp", "rounds_per_chunk", "throughput", "time"):
        assert set(data[key]) >= {"value", "unit", "witness"}, key
    assert data["steps"]["value"] == 2 and data["rounds"]["value"] == 7 and data["chunks"] == 6
    assert data["throughput"]["value"] == pytest.approx(171.428571)


def test_cli_gbps_override_and_text():
    out = cli("bounds", "-t", "torus2d:4x4", "-c", "allgather", "--gbps-per-unit", "50")
    assert out.returncode == 0, out.stderr
    assert "<= 213.333333 GB/s" in out.stdout and "steps:" in out.stdout and "4 hops away" in out.stdout


def test_cli_bad_input():
    out = cli("bounds", "-t", "nosuch", "-c", "allgather")
    assert out.returncode == 2 and "unknown topology" in out.stderr and "Traceback" not in out.stderr
    out = cli("bounds", "-t", "dgx1", "-c", "gather", "--root", "9")
    assert out.returncode == 2 and "root" in out.stderr and "Traceback" not in out.stderr


def test_entry_bound_counts_a_link_covered_by_two_nic_groups_once():
    # mi250 x 2: each link between the nodes is in its sender's NIC out-group and its receiver's in-group;
    # the 16 in-groups alone bound what enters a node (16 per round): 256 chunks, 16 rounds (was 8: both
    # families of groups summed), which the engine's schedule meets
    t = library.topology("mi250", 2)
    b = lower_bounds(t, library.collective("alltoall", t.ranks), lp=False)
    assert b.rounds.value == 16 and b.rounds.witness["from"] == "entry"
    assert b.rounds.witness["entry"]["capacity"] == 16


def test_cli_entry_bound_without_a_last_hop_names_no_rank():
    r = subprocess.run([sys.executable, "-m", "smtcoll", "bounds", "-t", "mi250", "--nodes", "3", "-c", "alltoall",
                        "--no-lp"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.strip().startswith("rounds:"))
    assert ">= 32 rounds" in line and "512 chunks must enter node 0, at most 16 per round" in line
    assert "rank -1" not in line


def test_the_multicast_lp_is_skipped_where_it_would_take_a_minute():
    t = library.topology("a100", 3)
    b = lower_bounds(t, library.collective("allgather", t.ranks))
    assert b.lp.value is None and "207360 variables (limit 60000)" in b.lp.note
    assert b.rounds.value == 12  # the receive bound, which the engine's schedule meets


def test_a_port_group_listed_before_a_shared_group_still_bounds_its_rank():
    """Held-out PCIe box: per-GPU in-ports (listed first) and a socket link shared by two GPUs. Chaining a
    link's groups in file order let flow merged in the socket group reach rank 3 past its in-port: the
    receive and cut bounds said 2 rounds where 3 chunks must enter rank 3 through a port of 1."""
    from smtcoll.model import Link, SwitchGroup, Topology

    links = [Link(s, d, 1) for s in range(4) for d in range(4) if s != d]
    ports = [SwitchGroup([s for s in range(4) if s != r], [r], 1, f"in{r}") for r in range(4)]
    sockets = [SwitchGroup([0, 1], [2, 3], 1, "upi01"), SwitchGroup([2, 3], [0, 1], 1, "upi10")]
    topo = Topology("pcie-box", 4, links, ports + sockets)
    coll = library.collective("allgather", 4)
    b = lower_bounds(topo, coll)
    assert b.receive.value == 3 and b.receive.witness["capacity"] == 1
    assert b.cut.value == 3 and b.rounds.value == 3
    assert check_witness("cut", b.cut.witness, topo, coll) == 3


def test_chunk_hops_count_a_switch_by_its_ports_not_its_links():
    """A switch of 6 ports moves 6 chunks a round, not the 30 of its links: an Allreduce of 8 chunks makes
    8 x 2(6-1) = 80 address transfers, so 14 rounds (the ring's), where the links' sum said 3 and the
    port cut 8 (held-out sw2x3 and hub-and-spoke:6 at C8: the engine's 14 rounds were shown 6 above)."""
    topo = library.topology("hub-and-spoke:6")
    coll = library.collective("allreduce", 6, None, 8)
    b = lower_bounds(topo, coll)
    assert b.hops.value == 14 and b.hops.witness["capacity"] == 6
    assert b.rounds.value == 14
    assert check_witness("hops", b.hops.witness, topo, coll) == 14
