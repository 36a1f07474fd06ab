"""One-address Allreduce with overlapping phases (issue 24): within 1.5x of the distance bound on
rings, tori and machines whose ranks pair up by xor, every schedule accepted by the checker."""

from __future__ import annotations

import pytest

from smtcoll import library
from smtcoll.check.schedule import check_schedule
from smtcoll.synth.scale import allreduce, engine


def _run(topo: str, nodes: int = 1) -> engine.Scaled:
    t = library.topology(topo, nodes)
    return engine.synthesize(t, library.collective("allreduce", t.ranks))


@pytest.mark.parametrize("topo, nodes, steps, distance", [
    ("torus2d:6x6", 1, 8, 6),  # was 12 (reduce to the centre, then broadcast)
    ("ring:64", 1, 47, 32),  # was 64
    ("ring:6", 1, 4, 3),  # the exact search's optimum (3 steps is unsat)
    ("ring:8", 1, 5, 4),  # the certified optimum of Ring(8)
    ("torus2d:12x12", 1, 16, 12),
    ("torus2d:5x7", 1, 7, 5),  # 3 (5-cycle) + 4 (two junctions across lines); was 10, 9, then 8 (1.6x)
    ("a100", 2, 4, 2),  # xor partners; one chunk out of a GPU per round: 2^4 ranks need 4 steps (was 6)
])
def test_overlapping_allreduce_within_one_and_a_half_distance(topo: str, nodes: int, steps: int,
                                                               distance: int) -> None:
    r = _run(topo, nodes)
    assert check_schedule(r.schedule).verdict == "ok"
    assert r.bounds.steps_value == distance
    assert len(r.schedule.steps) == steps
    if topo != "a100":
        assert len(r.schedule.steps) <= 1.5 * distance


def test_overlapping_allreduce_torus_16x16() -> None:
    r = _run("torus2d:16x16")
    assert len(r.schedule.steps) == 22 <= 1.5 * r.bounds.steps_value  # distance 16; was 32


def test_every_cycle_plan_is_accepted_on_small_rings() -> None:
    # each plan alone, not only the best: the as-soon-as-possible order must keep every plan's data flow
    for n in range(4, 14):
        topo = library.topology(f"ring:{n}")
        coll = library.collective("allreduce", n)
        for shape in allreduce._shapes(n):
            plan = allreduce._Plan(n)
            allreduce._cycle(plan, list(range(n)), shape)
            steps = allreduce._asap(topo, plan)
            assert steps is not None
            sched = allreduce._schedule(topo, coll, steps)
            assert check_schedule(sched).verdict == "ok", (n, shape)


def test_no_doubling_without_the_xor_links() -> None:
    t = library.topology("ring:8")
    assert allreduce.doubling_allreduce(t, library.collective("allreduce", 8)) is None


def _within(topo: str, nodes: int = 1) -> tuple[int, int]:
    """(steps, strongest bound) of the engine's checked schedule: steps <= 1.5x the bound `synth` reports."""
    r = _run(topo, nodes)
    assert check_schedule(r.schedule).verdict == "ok"
    bound = r.bounds.least_steps(True, 1)
    assert len(r.schedule.steps) <= 1.5 * bound, (topo, nodes, len(r.schedule.steps), bound)
    return len(r.schedule.steps), bound


@pytest.mark.parametrize("topo, steps, bound", [
    ("ring:9", 6, 5),  # 4k + 1: the junction plan's 3k (the four arcs took 3k + 1); bound: the odd cycle's D + 1
    ("ring:11", 8, 6),  # 4k + 3: 3k + 2, the least the exact search finds; the distance bound 5 alone gives 1.6x
    ("ring:33", 24, 17),
    ("torus2d:3x9", 7, 5),  # a 3-cycle's exchange of all pairs (was rejected: 10 steps, the greedy phases)
    ("torus3d:3x4x5", 6, 5),  # 1 + 2 + 3 (was 10)
    ("torus2d:5x5", 6, 4),  # 3 + 3 (was 8)
])
def test_odd_cycles_and_tori_within_one_and_a_half_of_the_bound(topo: str, steps: int, bound: int) -> None:
    assert _within(topo) == (steps, bound)


def test_junction_plan_is_the_least_on_odd_cycles() -> None:
    # floor((3n - 1) / 4) steps: the exact search's optimum in the checker's model for n = 5..13 (docs/synth.md)
    for n in range(5, 40, 2):
        topo = library.topology(f"ring:{n}")
        s = allreduce.torus_allreduce(topo, library.collective("allreduce", n))
        assert s is not None and check_schedule(s).verdict == "ok"
        assert len(s.steps) == (3 * n - 1) // 4, n


def test_many_nodes_by_recursive_doubling_over_the_nodes() -> None:
    assert _within("ndv2", 16) == (11, 10)  # was 17 (reduce + broadcast), 12 (doubling over the nodes): windows


@pytest.mark.slow  # about 3 CPU s (the check of 750 steps), more wall-clock on a loaded machine
def test_a_thousand_ranks_answer_without_the_phases() -> None:
    r = _run("ring:1001")  # 4k + 1: 750 = 1.5 x 500; the greedy phases (2 x 500 at least) are not built
    assert len(r.schedule.steps) == 750 and r.method.startswith("arcs per cycle")


def test_a_copy_and_an_addition_in_one_step_lower_to_xml_that_verifies(tmp_path) -> None:
    # the junction rank takes one arc's sum (a copy) and adds the other's in the same step: the XML keeps
    # that order and both runtimes' checks accept it
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out, xml = tmp_path / "s.json", tmp_path / "s.xml"
    r = subprocess.run([sys.executable, "-m", "smtcoll", "synth", "-t", "ring:9", "-c", "allreduce", "--method",
                        "scale", "-o", str(out), "--xml", str(xml)], capture_output=True, text=True, cwd=root,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    v = subprocess.run([sys.executable, "-m", "smtcoll", "verify", str(xml), str(out)], capture_output=True,
                       text=True, cwd=root, timeout=300)
    assert v.returncode == 0, v.stdout + v.stderr
    assert "6 steps" in r.stdout


def test_two_junction_plan_alone_is_accepted_on_cycles_of_4k_plus_3() -> None:
    # a cycle alone (no partner line): every rank by 3k + 1 but the X centre, which takes k + 1 more hops
    for n in range(7, 40, 4):
        topo = library.topology(f"ring:{n}")
        plan = allreduce._Plan(n)
        centre = allreduce._two_junctions(plan, list(range(n)))
        steps = allreduce._asap(topo, plan)
        assert steps is not None
        assert check_schedule(allreduce._schedule(topo, library.collective("allreduce", n), steps)).verdict == "ok"
        assert len(steps) == 3 * (n - 3) // 4 + 2 and centre == 3 * (n - 3) // 4 + 3, n


@pytest.mark.parametrize("topo, steps, bound", [
    # not tuned on: odd tori with a side of 4k + 3 (all were above 1.5x the distance bound before)
    ("torus2d:7x11", 11, 8),  # was 13
    ("torus3d:5x3x7", 8, 6),  # was 9
    ("torus3d:5x5x11", 13, 9),  # was 14 (1.56x)
    ("torus2d:13x15", 18, 13),  # was 20 (1.54x)
])
def test_odd_tori_with_a_side_of_4k_plus_3_within_one_and_a_half_of_the_bound(topo: str, steps: int,
                                                                              bound: int) -> None:
    assert _within(topo) == (steps, bound)
