"""The total forwarded as soon as a rank holds it (`scale/totals.py`): never longer, always accepted, and
what a user sees on odd tori (`synth` with no `--method` within 1.5x of what `bounds` proves)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from smtcoll import library
from smtcoll.check.schedule import check_schedule
from smtcoll.model import Schedule, Send, Step
from smtcoll.synth.scale import allreduce, totals, translate

ROOT = Path(__file__).resolve().parents[2]


def _rotated_plan(name: str, shift: int) -> tuple[library.Topology, list[list[tuple[int, int]]]]:
    """The junction plan on every line of both dimensions, every other line of the second rotated."""
    topo = library.topology(name)
    g = translate.group_of(topo)
    assert g is not None
    plan = allreduce._Plan(topo.ranks)
    for k in (0, 1):
        shape = allreduce._shapes(g.dims[k])[-1]
        for line in allreduce._lines(g, k):
            o = shift * allreduce._parity(g, line[0], k) if k == 1 else 0
            allreduce._cycle(plan, line[o:] + line[:o], shape)
    steps = allreduce._asap(topo, plan)
    assert steps is not None
    return topo, steps


def _sched(topo: library.Topology, steps: list[list[tuple[int, int]]]) -> Schedule:
    coll = library.collective("allreduce", topo.ranks)
    return Schedule(topo, coll, [Step(1, [Send(0, u, v) for u, v in s]) for s in steps])


def test_forwarding_the_total_is_accepted_and_never_longer() -> None:
    for name, shift in (("torus2d:7x7", 0), ("torus2d:7x7", 2), ("torus2d:5x11", 3), ("torus2d:9x11", 4)):
        topo, steps = _rotated_plan(name, shift)
        coll = library.collective("allreduce", topo.ranks)
        out = totals.spread_totals(topo, coll, steps)
        assert out is not None
        assert check_schedule(_sched(topo, out)).verdict == "ok", (name, shift)
        assert len(out) <= len(steps)
    # where the rotated lines meet, one step less (the last rank of a line takes the total across)
    topo, steps = _rotated_plan("torus2d:9x11", 2)
    out = totals.spread_totals(topo, library.collective("allreduce", topo.ranks), steps)
    assert out is not None and len(out) == len(steps) - 1


def test_a_double_count_in_the_input_is_refused() -> None:
    topo = library.topology("ring:5")
    coll = library.collective("allreduce", 5)
    # 1 adds 0's value, then 0 sends {0} again: counted twice at 1
    assert totals.spread_totals(topo, coll, [[(0, 1)], [(0, 1)]]) is None


def _json(*args: str) -> dict:
    r = subprocess.run([sys.executable, "-m", "smtcoll", *args, "--format", "json"], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_synth_with_no_method_on_an_odd_torus_is_within_one_and_a_half_of_bounds(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    found = _json("synth", "-t", "torus2d:7x11", "-c", "allreduce", "-o", str(out))
    bound = _json("bounds", "-t", "torus2d:7x11", "-c", "allreduce")["steps"]["value"]
    assert found["status"] == "found" and found["steps"] <= 1.5 * bound, (found["steps"], bound)
    v = subprocess.run([sys.executable, "-m", "smtcoll", "verify", str(out)], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert v.returncode == 0, v.stdout + v.stderr
