"""The large-instance engine on small instances: every method's schedule is accepted by the checker, is
never below the lower bound, and meets it where the method is exact (never timings)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from smtcoll import library
from smtcoll.bounds import check_witness, lower_bounds, search_bounds
from smtcoll.check.schedule import check_schedule
from smtcoll.synth.scale import engine, translate

ROOT = Path(__file__).resolve().parents[2]


def _run(topo: str, coll: str, nodes: int = 1, chunks: int = 1) -> engine.Scaled:
    t = library.topology(topo, nodes)
    return engine.synthesize(t, library.collective(coll, t.ranks, None, chunks))


@pytest.mark.parametrize("topo, coll, method, steps", [
    ("torus2d:4x4", "allgather", "translate", 4),
    ("torus2d:6x6", "allgather", "translate", 9),  # ceil(35 / 4): the tail search fills the last step
    ("hypercube:4", "allgather", "translate", 4),
    ("ring:8", "allgather", "translate", 4),
    ("hypercube:4", "alltoall", "translate", 8),  # chunk-hops: 512 over 64 links
    ("torus2d:4x4", "alltoall", "translate", 8),  # half of the antipodal packets go each way
    ("ring:8", "reducescatter", "dual of translate", 4),
    ("hypercube:3", "allreduce", "recursive doubling", 3),
    ("mesh2d:4x4", "allgather", "greedy", 8),
    ("line:4", "broadcast", "greedy", 3),
    ("dgx1", "reduce", "dual of greedy", 2),
])
def test_methods_reach_the_bound(topo: str, coll: str, method: str, steps: int) -> None:
    r = _run(topo, coll)
    assert check_schedule(r.schedule).verdict == "ok"
    assert r.method.startswith(method)
    assert len(r.schedule.steps) == steps == r.bounds.least_steps(True, 1)
    assert r.to_json()["gap_steps"] == 0


@pytest.mark.parametrize("topo, coll, nodes, chunks", [
    ("ring:8", "allreduce", 1, 1),  # reduce + broadcast
    ("dgx1", "allreduce", 1, 8),  # reducescatter + allgather
    ("a100", "alltoall", 2, 1),
    ("dgx1", "alltoall", 1, 2),
    ("ring:16", "alltoall", 1, 1),  # the LP-routed paths split the half-way packets: 32, the bound
    ("line:5", "gather", 1, 1),
])
def test_methods_never_beat_the_bound(topo: str, coll: str, nodes: int, chunks: int) -> None:
    r = _run(topo, coll, nodes, chunks)
    assert check_schedule(r.schedule).verdict == "ok"
    gap = r.to_json()
    assert gap["gap_steps"] >= 0 and gap["gap_rounds"] >= 0
    assert len(r.schedule.steps) <= 3 * r.bounds.least_steps(True, chunks)  # a sanity bar: quality is benchmarked


def test_deterministic() -> None:
    a, b = _run("torus2d:4x4", "alltoall"), _run("torus2d:4x4", "alltoall")
    assert a.schedule.steps == b.schedule.steps
    c, d = _run("a100", "allgather", 2), _run("a100", "allgather", 2)
    assert c.schedule.steps == d.schedule.steps


def test_group_detection_only_where_links_are_translates() -> None:
    torus = translate.group_of(library.topology("torus2d:3x5"))
    cube = translate.group_of(library.topology("hypercube:3"))
    assert torus is not None and torus.dims == (3, 5)
    assert cube is not None and cube.dims == (2, 2, 2)
    assert translate.group_of(library.topology("ring:6").reversed()) is not None
    assert translate.group_of(library.topology("mesh2d:3x3")) is None
    assert translate.group_of(library.topology("dgx1")) is None


def test_unreachable_rank_is_no_schedule() -> None:
    from smtcoll.model import Link, Topology

    t = Topology("two-pairs", 4, [Link(0, 1), Link(1, 0), Link(2, 3), Link(3, 2)])
    with pytest.raises(engine.NoSchedule):
        engine.synthesize(t, library.collective("allgather", 4))


def test_hops_bound_and_its_witness() -> None:
    t, c = library.topology("torus2d:8x8"), library.collective("alltoall", 64)
    b = lower_bounds(t, c, lp=False)
    assert b.hops.value == 64 and b.hops.witness["chunk_hops"] == 16384 and b.hops.witness["capacity"] == 256
    assert check_witness("hops", b.hops.witness, t, c) == 64
    assert search_bounds(t, c).rounds(1) == 64


def test_search_bounds_agree_with_lower_bounds() -> None:
    for topo, coll, nodes in [("a100", "allgather", 2), ("ring:8", "alltoall", 1), ("dgx1", "reducescatter", 1)]:
        t = library.topology(topo, nodes)
        c = library.collective(coll, t.ranks)
        s, full = search_bounds(t, c), lower_bounds(t, c)
        assert s.steps.value == full.steps.value
        assert s.rounds(1) == full.rounds.value


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "smtcoll", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


def test_synth_reports_the_method_and_gap() -> None:
    r = cli("synth", "-t", "a100", "--nodes", "2", "-c", "alltoall", "--method", "scale", "--format", "json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    # 10 rounds, the flow LP's bound: optimal, and said so (the LP routing alone gives 12)
    assert d["status"] == "found" and d["method"].startswith("scale: one rank's routes")
    assert d["steps"] == 10 and d["gap"]["steps_bound"] == 10 and d["gap"]["gap_steps"] == 0
    assert d["optimal"]["proved"] is True and d["lower_bound"]["rounds"] == 10


def test_synth_auto_at_the_bound_needs_no_search() -> None:
    r = cli("synth", "-t", "hypercube:5", "-c", "allgather", "--format", "json")
    d = json.loads(r.stdout)
    assert r.returncode == 0 and d["steps"] == 7 and d["optimal"]["proved"]
    assert [a["method"] for a in d["attempts"]] == ["scale"]


@pytest.mark.slow
def test_a_large_alltoall_answers_by_default_within_the_work_budgets() -> None:
    # ring:100 Alltoall: the routing's store and forward and the greedy would each take minutes (their work
    # budgets skip them); the translate schedule answers, 25 steps above the cut bound of 1250
    r = cli("synth", "-t", "ring:100", "-c", "alltoall", "--format", "json")
    d = json.loads(r.stdout)
    assert r.returncode == 0 and d["status"] == "found" and d["steps"] <= 1275


def test_scatter_is_the_time_reversal_of_its_gather_mirror_where_the_greedy_misses() -> None:
    """Held-out 4x4 torus with x links twice the y links, 8 chunks: the greedy sent the root's chunks out
    in an order that blocked the y links (39 steps); the Gather-shaped mirror on the reversed torus reaches
    the root's egress bound, 120 chunks at 6 per round, and its time-reversal is a Scatter of 20 steps."""
    from smtcoll.model import Collective, Link, Schedule, Topology

    links = []
    for y in range(4):
        for x in range(4):
            r = 4 * y + x
            links += [Link(r, 4 * y + (x + 1) % 4, 2), Link(r, 4 * y + (x - 1) % 4, 2),
                      Link(r, 4 * ((y + 1) % 4) + x, 1), Link(r, 4 * ((y - 1) % 4) + x, 1)]
    topo = Topology("torus4x4xy", 16, links)
    coll = library.collective("scatter", 16, 0, 8)
    s = engine.synthesize(topo, coll)
    assert check_schedule(s.schedule).verdict == "ok"
    assert len(s.schedule.steps) == s.bounds.least_steps(True, 8) == 20
    # the engine's LP routing (session 13) reaches it first; the mirror of the greedy's Gather does too
    from smtcoll.synth.greedy import greedy_schedule
    from smtcoll.synth.scale import mirror

    def greedy(t: Topology, c: Collective) -> tuple[Schedule, str]:
        g = greedy_schedule(t, c, 1000, order="links")
        assert g is not None
        return g, "greedy"

    mi = mirror.mirrored(topo, coll, greedy)
    assert mi is not None and mi[1].startswith("mirror of") and check_schedule(mi[0]).verdict == "ok"
    assert len(mi[0].steps) == 20 < len(greedy(topo, coll)[0].steps)  # 39
