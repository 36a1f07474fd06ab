"""The front door of synthesis (smtcoll/synth/door.py): one request, one answer from the API, the CLI and
the sweep; the API refuses what the CLI refuses; the exact search's budget is deterministic."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import smtcoll
from smtcoll import errors, specs
from smtcoll.cli import app, run_guarded
from smtcoll.synth.door import _exact_cannot_improve, engine_result, synthesize
from smtcoll.synth.request import Limits, SynthRequest

REPO = Path(__file__).resolve().parents[2]


def cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        run_guarded(app, [str(a) for a in args])
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return (e.value.code if isinstance(e.value.code, int) else 0), out, err


def _same(data: dict) -> dict:
    """A result's JSON without what measures the machine (seconds) or names the output files."""
    data = {k: v for k, v in data.items() if k not in ("seconds", "files")}
    data["attempts"] = [{k: v for k, v in a.items() if k != "seconds"} for a in data["attempts"]]
    return data


def test_the_same_request_gives_the_same_result_from_the_api_the_cli_and_the_sweep(capsys, tmp_path) -> None:
    from smtcoll.sweep.sizes import SizeRange
    from smtcoll.sweep.tasks import Options, Task, compute

    topo, coll = specs.resolve_topology("ring:4"), specs.resolve_collective("allgather", 4)
    budget = 5.0  # the sweep's budget (seconds), as a work budget: what the sweep asks
    work = int(budget * 3_000_000)
    api = smtcoll.synthesize(topo, coll, strategy="pareto", method="exact", max_chunks=2, budget=work,
                             timeout=2 * budget + 30)
    code, out, _ = cli(capsys, "synth", "-t", "ring:4", "-c", "allgather", "--strategy", "pareto", "--method",
                       "exact", "--max-chunks", "2", "--budget", work, "--timeout", 2 * budget + 30, "--format", "json")
    assert code == 0 and _same(json.loads(out)) == _same(api.to_json())
    swept = compute(Task("ring:4", 1, "allgather", topo, coll, Options(SizeRange(1024, 1 << 20), budget=budget,
                                                                       max_chunks=2)).payload())
    assert swept["synth"]["frontier"] == [[p.steps, p.rounds, p.chunks] for p in api.points]
    assert api.lower_bound is not None and swept["synth"]["complete"]
    assert swept["synth"]["lower_bound"] == api.lower_bound.to_json()
    # the default request: the API and the command answer with the same method and schedule
    code, out, _ = cli(capsys, "synth", "-t", "ring:8", "-c", "allgather", "--format", "json")
    default = smtcoll.synthesize("ring:8", "allgather")
    assert code == 0 and _same(json.loads(out)) == _same(default.to_json()) and default.method.startswith("scale")


@pytest.mark.parametrize(("kwargs", "error", "option"), [
    ({"chunks": 10**9}, errors.TooLarge, "--chunks"),
    ({"steps": -1}, errors.UsageError, "--steps"),
    ({"steps": True}, errors.UsageError, "--steps"),
    ({"timeout": math.nan}, errors.UsageError, "--timeout"),
    ({"timeout": math.inf}, errors.UsageError, "--timeout"),
    ({"steps": 3, "rounds": 2}, errors.ModelError, "rounds"),
    ({"rounds": 2, "strategy": "pareto"}, errors.ModelError, "--chunks/--rounds"),
    ({"strategy": "instance"}, errors.ModelError, "--steps"),
    ({"method": "bogus"}, errors.UsageError, "--method"),
    ({"budget": -5}, errors.UsageError, "--budget"),
])
def test_the_api_refuses_what_the_cli_refuses_at_once(kwargs, error, option) -> None:
    ring, allgather = smtcoll.load_topology("ring:4"), smtcoll.load_collective("allgather", ranks=4)
    t0 = time.process_time()
    with pytest.raises(error) as e:
        smtcoll.synthesize(ring, allgather, **kwargs)
    assert time.process_time() - t0 < 1 and str(e.value).startswith(option), str(e.value)
    assert errors.exit_code_of(e.value) == errors.EXIT_UNUSABLE


def test_a_collective_of_another_rank_count_is_a_model_error() -> None:
    with pytest.raises(errors.ModelError, match="has 8 ranks but topology ring:4 has 4"):
        smtcoll.synthesize(smtcoll.load_topology("ring:4"), smtcoll.load_collective("allgather", ranks=8))


def test_an_engine_schedule_the_checker_rejects_is_an_internal_error(capsys, monkeypatch) -> None:
    from smtcoll.model import Schedule
    from smtcoll.synth.scale import engine

    real = engine._any

    def broken(topo, coll, b):
        sched, method = real(topo, coll, b)
        return Schedule(sched.topology, sched.collective, sched.steps[:-1], sched.name), method

    monkeypatch.setattr(engine, "_any", broken)
    with pytest.raises(errors.InternalError):
        synthesize(specs.resolve_topology("ring:8"), specs.resolve_collective("allgather", 8),
                   SynthRequest(method="scale"))
    code, _, err = cli(capsys, "synth", "-t", "ring:8", "-c", "allgather", "--method", "scale")
    assert code == errors.EXIT_INTERNAL and "rejected by the checker" in err


@pytest.mark.slow  # the bounds' LP and the engine on 16 and 36 ranks: 3 s CPU
def test_auto_leaves_the_engines_answer_where_the_exact_search_cannot_improve_it() -> None:
    # above the bound, but the ranks too many: the engine answers with its gap, exit 0, and says why the
    # exact search was not tried
    topo = specs.resolve_topology("torus2d:6x6")
    result = synthesize(topo, specs.resolve_collective("allreduce", topo.ranks), SynthRequest())
    assert result.status == "found" and result.method.startswith("scale") and result.work == 0
    assert result.gap is not None and result.gap.gap_steps > 0 and result.to_json()["gap"]["gap_steps"] > 0
    assert "the exact search is not tried" in result.message and "above 16" in result.message
    # 16 ranks of Alltoall: the engine is at the proved bound (10 rounds), so the search is not run at all;
    # had it missed, the encoding of its steps is beyond what the search answers within its budget
    topo = specs.resolve_topology("a100", 2)
    coll = specs.resolve_collective("alltoall", topo.ranks)
    result = synthesize(topo, coll, SynthRequest())
    assert result.status == "found" and result.method.startswith("scale") and result.work == 0
    assert result.gap is not None and result.gap.gap_steps == 0
    _, scaled = engine_result(topo, coll, 1)
    assert scaled is not None and "its encoding of" in _exact_cannot_improve(topo, coll, SynthRequest(), scaled)


def test_pareto_honours_the_method() -> None:
    topo, coll = specs.resolve_topology("torus2d:4x4"), specs.resolve_collective("allgather", 16)
    scale = synthesize(topo, coll, SynthRequest(strategy="pareto", method="scale"))
    assert scale.status == "found" and len(scale.points) == 1 and scale.optimal.proved is False
    assert scale.method.startswith("scale") and scale.schedule is not None and scale.work == 0


def test_the_budget_is_counted_in_solver_work_not_seconds() -> None:
    topo, coll = specs.resolve_topology("dgx1"), specs.resolve_collective("allgather", 8)
    request = SynthRequest(strategy="pareto", method="exact", limits=Limits(work=300_000))
    first = synthesize(topo, coll, request)
    assert first.status == "timeout" and first.stopped_by == "budget" and first.work == 300_000
    again = synthesize(topo, coll, request)
    assert _same(again.to_json()) == _same(first.to_json())


BURN = "import time\nend = time.time() + 120\nwhile time.time() < end:\n    pass\n"


@pytest.mark.slow
def test_the_same_command_gives_the_same_output_on_an_idle_and_a_loaded_machine(tmp_path) -> None:
    """The exact search stops at its work budget partway through the frontier: the same frontier, the same
    schedule file, byte for byte, with four processes competing for the CPU."""
    def run(name: str) -> tuple[bytes, dict]:
        out = tmp_path / f"{name}.json"
        proc = subprocess.run([sys.executable, "-m", "smtcoll", "synth", "-t", "dgx1", "-c", "allgather", "--strategy",
                               "pareto", "--method", "exact", "--budget", "400000", "-o", str(out), "--format", "json"],
                              capture_output=True, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                              timeout=300)
        assert proc.returncode == 3, proc.stderr
        return out.read_bytes(), _same(json.loads(proc.stdout))

    idle = run("idle")
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(4)]
    try:
        loaded = run("loaded")
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert idle == loaded and idle[1]["stopped_by"] == "budget"


def test_the_request_names_every_construction() -> None:
    from smtcoll.synth.constructions import METHODS
    from smtcoll.synth.request import CONSTRUCTIONS

    assert set(CONSTRUCTIONS) == set(METHODS)
    with pytest.raises(errors.ModelError, match="chooses its own chunk count"):
        SynthRequest(method="ring", chunks=2)


def test_pareto_auto_seeds_an_incomplete_frontier_with_the_engines_point(monkeypatch) -> None:
    from smtcoll.synth.exact import strategies
    from smtcoll.synth.result import Outcome

    def out_of_budget(self, question, cap=None):  # every solver question: the budget is spent
        self.limit = "budget"
        self.record(question.steps, question.rounds, question.chunks, "budget", 0.0, "direct")
        return Outcome("unknown", None, 0.0, reason="budget")

    monkeypatch.setattr(strategies.InstanceSolver, "solve", out_of_budget)
    topo, coll = specs.resolve_topology("star:6"), specs.resolve_collective("alltoall", 6)
    auto = synthesize(topo, coll, SynthRequest(strategy="pareto"))
    # the default budget is not the user's limit: the engine's point answers, exit 0, not proved complete
    assert auto.status == "found" and auto.stopped_by == "budget" and auto.schedule is not None
    assert [(p.steps, p.rounds, p.chunks) for p in auto.points] == [(8, 8, 1)]
    assert auto.optimal.proved is False and "engine's point" in auto.message
    exact = synthesize(topo, coll, SynthRequest(strategy="pareto", method="exact"))
    assert exact.status == "timeout" and not exact.points  # --method exact: the search's own answer


def test_auto_counts_a_combining_encodings_contributions_before_building_it() -> None:
    # dgx2 Allreduce at 2 chunks: the engine's 12 steps for a bound of 4; the encoding of 11 steps carries a
    # literal per contribution per link (32 per link and step, 10^5 in all), which the estimate once left out
    # (10^4): auto built it, spent its whole budget (5.4 CPU s, 630 MB) and found nothing
    topo = specs.resolve_topology("dgx2")
    result = synthesize(topo, specs.resolve_collective("allreduce", topo.ranks), SynthRequest(chunks=2))
    assert result.status == "found" and result.method.startswith("scale") and result.work == 0
    assert result.gap is not None and result.gap.gap_steps > 0
    assert "the exact search is not tried: its encoding of" in result.message
    # a Reduce's first counts stay small (sends pruned toward the root): the search still beats the engine's 11
    topo = specs.resolve_topology("torus2d:4x4")
    result = synthesize(topo, specs.resolve_collective("reduce", topo.ranks), SynthRequest(chunks=8))
    assert result.schedule is not None and len(result.schedule.steps) == 5 and result.method == "exact"


def test_an_exact_search_that_does_not_beat_the_engine_names_the_engines_method_and_gap() -> None:
    # a 2-level fat tree (benchmarks/topologies/heldout): Scatter's greedy (the search's own) tied with the
    # engine's 12 steps; the answer was labelled "exact" with no gap although no exact schedule was found.
    # Scatter is at its bound since session 13 (4, the exit ramp); Allgather is one above its 4
    fattree = REPO / "benchmarks" / "topologies" / "heldout" / "fattree4x4.toml"
    topo = specs.resolve_topology(str(fattree))
    result = synthesize(topo, specs.resolve_collective("allgather", topo.ranks),
                        SynthRequest(limits=Limits(work=200_000)))
    assert result.schedule is not None and result.stopped_by == "budget" and not result.optimal.proved
    assert result.method.startswith("scale") and result.gap is not None
    assert result.gap.steps == len(result.schedule.steps) and result.gap.gap_steps == result.gap.steps - 4 > 0
    assert result.to_json()["gap"]["gap_steps"] == result.gap.gap_steps
