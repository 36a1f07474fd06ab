"""Every command answers: a result or a clear error with an exit code of the contract, within its limits.

One test per reproducer of the robustness issue (tiny limits), run through the same guard as the
`smtcoll` executable (`run_guarded`), so that a traceback or a wrong exit code would show here.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from smtcoll import errors, library
from smtcoll.cli import app
from smtcoll.cli.app import run_guarded

CONTRACT = {0, 1, 2, 3, 4}


def cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """Run `smtcoll ARGS` in-process through the CLI guard: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as e:
        run_guarded(app, [str(a) for a in args])
        raise SystemExit(0)
    out, err = capsys.readouterr()
    code = e.value.code if isinstance(e.value.code, int) else (0 if e.value.code is None else 2)
    assert "Traceback" not in out + err
    return code, out, err


def one_way(tmp_path: Path, ranks: int = 4, links: str = "[{src = 0, dst = 1}]") -> Path:
    p = tmp_path / "t.toml"
    p.write_text(f'[topology]\nname = "t"\nranks = {ranks}\nlinks = {links}\n')
    return p


# --- the exit-code table and the guard ------------------------------------------------------------

def _subclasses(cls: type[errors.SmtcollError]) -> list[type[errors.SmtcollError]]:
    out: list[type[errors.SmtcollError]] = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


def test_every_named_exception_has_a_code_of_the_table() -> None:
    # imported for the exception classes they define (RejectedSchedule, CannotLower, NotProved, SynthBug)
    import smtcoll.lower
    import smtcoll.proofs.certificate
    import smtcoll.synth.exact.strategies

    codes = set(errors.EXIT_CODES.values())
    assert codes == {1, 2, 3, 4, 70}
    for cls in _subclasses(errors.SmtcollError):
        assert cls.exit_code in codes, cls
    assert errors.InternalError.exit_code == errors.EXIT_INTERNAL not in CONTRACT
    assert smtcoll.synth.exact.strategies.SynthBug.exit_code == errors.EXIT_INTERNAL
    assert smtcoll.proofs.certificate.NotProved.exit_code == errors.EXIT_LIMIT
    assert errors.exit_code_of(ValueError()) == errors.EXIT_INTERNAL


def test_an_internal_error_says_what_to_report(capsys, monkeypatch, tmp_path) -> None:
    from smtcoll.cli import info

    def broken(*a, **k):
        raise ValueError("boom")

    monkeypatch.setattr(info, "topology_summary", broken)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    code, _, err = cli(capsys, "show", "topology", "ring:4")
    assert code == errors.EXIT_INTERNAL
    assert "internal error: ValueError: boom" in err and "smtcoll show topology ring:4" in err
    saved = list(tmp_path.glob("smtcoll-traceback-*.txt"))
    assert len(saved) == 1 and "Traceback" in saved[0].read_text() and "show topology ring:4" in saved[0].read_text()
    monkeypatch.setenv("SMTCOLL_TRACEBACK", "1")
    with pytest.raises(SystemExit) as e:
        run_guarded(app, ["show", "topology", "ring:4"])
    assert e.value.code == errors.EXIT_INTERNAL and "Traceback" in capsys.readouterr().err


# --- synth: more than 64 round distributions, reachability, ranges ---------------------------------

def test_instance_with_more_than_64_round_distributions(capsys) -> None:
    code, out, _ = cli(capsys, "synth", "-t", "ring:4", "-c", "allgather", "--strategy", "instance", "--steps", "4",
                       "--rounds", "12", "--chunks", "2", "--format", "json")
    assert code == 0 and json.loads(out)["status"] == "found"


def test_encoding_cap_guard_answers_sat_and_unsat() -> None:
    import math

    from smtcoll.synth.exact.encoding import MAX_SPLITS, Encoding

    assert math.comb(11, 3) > MAX_SPLITS and math.comb(13, 2) > MAX_SPLITS  # the one-call path, with a guard
    enc = Encoding(library.topology("ring:4"), library.collective("allgather", 4).with_chunks(2), 4, 12)
    assert enc.check(12).verdict == "sat" and enc.check(10).verdict == "sat"
    line = Encoding(library.topology("line:5"), library.collective("allgather", 5), 3, 14)
    assert line.check(14).verdict == "unsat"  # rank 0 is 4 hops from rank 4


@pytest.mark.parametrize("args, what", [
    (["--timeout", "nan"], "--timeout"), (["--timeout", "inf"], "--timeout"), (["--timeout", "-1"], "--timeout"),
    (["--steps", "3", "--chunks", "1000000000"], "--chunks"), (["--rounds", "1000000000"], "--rounds"),
    (["--steps", "100000", "--timeout", "30"], "--steps"), (["--max-steps", "1000000000"], "--max-steps"),
])
def test_synth_parameters_refused_before_any_work(capsys, args, what) -> None:
    code, _, err = cli(capsys, "synth", "-t", "ring:4", "-c", "allgather", *args)
    assert code == 2 and what in err


def test_composed_node_count_refused_before_composing(capsys) -> None:
    code, _, err = cli(capsys, "synth", "-t", "ndv2", "--nodes", "100000", "-c", "allgather")
    assert code == 2 and "--nodes" in err  # outside the option's declared range (smtcoll/cli/options.py)
    code, _, err = cli(capsys, "synth", "-t", "ring:128", "--nodes", "64", "-c", "allgather")
    assert code == 2 and "4096 ranks" in err  # within the range, but the composition is too large


def test_unreachable_rank_is_infeasible_at_once_with_the_witness(capsys, tmp_path) -> None:
    topo = one_way(tmp_path)
    for extra in ([], ["--steps", "2"], ["--strategy", "pareto"]):
        code, out, _ = cli(capsys, "synth", "-t", topo, "-c", "allgather", *extra)
        assert code == 1 and "rank 0 needs chunk 1" in out and "1000000000" not in out
    code, out, _ = cli(capsys, "synth", "-t", topo, "-c", "allgather", "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["optimal"]["witness"] == {"rank": 0, "chunk": 1, "holders": [1]}
    assert data["attempts"] == []


def test_linkless_topology_is_infeasible_at_once(capsys, tmp_path) -> None:
    code, out, _ = cli(capsys, "synth", "-t", one_way(tmp_path, 64, "[]"), "-c", "allgather", "--timeout", "5")
    assert code == 1 and "no path of links" in out


def test_collective_too_large_names_the_option(capsys, tmp_path) -> None:
    code, _, err = cli(capsys, "synth", "-t", one_way(tmp_path, 4096, "[]"), "-c", "allgather")
    assert code == 2 and "--max-cells" in err


# --- time and memory limits -----------------------------------------------------------------------

def test_timeout_covers_the_encoding(capsys) -> None:
    code, out, _ = cli(capsys, "synth", "-t", "ring:4", "-c", "allgather", "--steps", "3000", "--timeout", "1",
                       "--format", "json")
    data = json.loads(out)
    assert code == 3 and data["status"] == "timeout"
    assert data["seconds"] < 1 + 3  # the run's own clock; a margin for a loaded machine


def test_greedy_stops_at_its_deadline() -> None:
    import time

    from smtcoll.synth.greedy import greedy_schedule

    topo, coll = library.topology("hypercube:4"), library.collective("allgather", 16)
    assert greedy_schedule(topo, coll, 100) is not None
    assert greedy_schedule(topo, coll, 100, deadline=time.monotonic() - 1) is None


def test_instance_that_would_not_fit_the_memory_cap_is_refused(capsys) -> None:
    code, _, err = cli(capsys, "synth", "-t", "ring:4", "-c", "allgather", "--steps", "4", "--max-memory", "64")
    assert code == 2 and "--max-memory" in err


def test_least_steps_at_the_memory_cap_keeps_the_greedy_schedule(capsys, tmp_path) -> None:
    # DGX-1 Alltoall, the exact search: the greedy schedule is not proved optimal, the encodings do not fit
    # in 100 MB (the engine reaches the bound there: --method exact asks the search)
    out_file = tmp_path / "s.json"
    code, out, _ = cli(capsys, "synth", "-t", "dgx1", "-c", "alltoall", "--max-memory", "100", "-o", out_file,
                       "--method", "exact")
    assert code == 3 and "memory limit" in out and "--max-memory" in out
    assert json.loads(out_file.read_text())["steps"]


def _unknown_after(monkeypatch, calls: int, reason: str = "") -> None:
    """Solver questions after the first `calls` answer `unknown`, as at a time limit (or `reason`: "budget",
    the work budget; "memory", the memory cap)."""
    from smtcoll.synth.exact import strategies
    from smtcoll.synth.result import Outcome

    real = strategies.InstanceSolver.solve
    count = {"n": 0}

    def solve(self, *a, **k):
        count["n"] += 1
        if count["n"] > calls:
            q = a[0]  # the Instance asked
            self.record(q.steps, q.rounds, q.chunks, "timeout", 0.0, "direct")
            self.limit = reason or "time"
            return Outcome("unknown", None, 0.0, reason=reason)
        return real(self, *a, **k)

    monkeypatch.setattr(strategies.InstanceSolver, "solve", solve)


def test_pareto_at_its_time_limit_keeps_the_frontier(capsys, monkeypatch, tmp_path) -> None:
    _unknown_after(monkeypatch, 2)
    out_file = tmp_path / "p.json"
    code, out, _ = cli(capsys, "synth", "-t", "ring:4", "-c", "allgather", "--strategy", "pareto", "-o", out_file,
                       "--format", "json", "--timeout", "600")
    data = json.loads(out)
    assert code == 3 and data["status"] == "timeout" and data["points"] and data["stopped_by"] == "time"
    assert data["optimal"]["proved"] is False and "not proved complete" in data["message"]
    assert json.loads(out_file.read_text())["steps"]


def test_least_steps_at_its_time_limit_writes_the_best_known(capsys, monkeypatch, tmp_path) -> None:
    _unknown_after(monkeypatch, 0)
    out_file = tmp_path / "s.json"
    # star:6 Alltoall: the engine's 8 steps are above the bound (5), so `auto` runs the exact search
    code, out, _ = cli(capsys, "synth", "-t", "star:6", "-c", "alltoall", "-o", out_file, "--timeout", "600")
    assert code == 3 and "best known" in out and out_file.exists() and "stopped by: the time limit" in out


@pytest.mark.parametrize("reason", ["budget", "memory"])
def test_a_default_limit_answers_with_the_best_known_and_exit_0(capsys, monkeypatch, tmp_path, reason) -> None:
    # the default budget (or memory cap) is not the user's limit: `auto` answers with the engine's schedule
    _unknown_after(monkeypatch, 0, reason)
    out_file = tmp_path / "s.json"
    code, out, _ = cli(capsys, "synth", "-t", "star:6", "-c", "alltoall", "-o", out_file, "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["status"] == "found" and out_file.exists() and data["stopped_by"] == reason
    assert data["optimal"]["proved"] is False and "not proved optimal" in data["message"]
    # the same limit set by the user is a limit reached: exit 3, still with the schedule
    option = ["--budget", "10000000"] if reason == "budget" else ["--max-memory", "4096"]
    code, out, _ = cli(capsys, "synth", "-t", "star:6", "-c", "alltoall", "-o", out_file, "--force", *option)
    assert code == 3 and out_file.exists() and "stopped by: the " + ("work budget" if reason == "budget" else
                                                                    "memory cap") in out


# --- lowering after synthesis ---------------------------------------------------------------------

def test_failed_lowering_after_synthesis_keeps_the_result(capsys, tmp_path) -> None:
    # 32 instances of a two-node Alltoall need more thread blocks per rank than any runtime allows (long
    # connections are spread over channels since the engine's schedules grew, so the step limit no longer fails)
    sched, xml = tmp_path / "a.json", tmp_path / "a.xml"
    code, out, err = cli(capsys, "synth", "-t", "ndv2", "--nodes", "2", "-c", "alltoall", "-o", sched, "--xml", xml,
                         "--instances", "32")
    assert code == errors.EXIT_NOT_WRITTEN and out.startswith("found:") and sched.exists() and not xml.exists()
    assert "thread blocks" in err and "--instances" in err
    code, out, _ = cli(capsys, "synth", "-t", "ndv2", "--nodes", "2", "-c", "alltoall", "--xml", xml)
    assert code == 0 and xml.exists()


# --- files ------------------------------------------------------------------------------------------

def test_lower_refuses_a_device_and_leaves_it_alone(capsys, tmp_path) -> None:
    sched = tmp_path / "s.json"
    assert cli(capsys, "synth", "-t", "ring:4", "-c", "allgather", "-o", sched)[0] == 0
    before = os.stat("/dev/null")
    code, _, err = cli(capsys, "lower", sched, "-o", "/dev/null")
    assert code == 2 and "is a device" in err
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode) and os.stat("/dev/null").st_ino == before.st_ino


def test_file_writer_cases(tmp_path) -> None:
    from smtcoll.files import write_text

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for bad in (fifo, tmp_path):
        with pytest.raises(errors.OutputError):
            write_text(bad, "x")
    with pytest.raises(errors.OutputError, match="does not exist"):
        write_text(tmp_path / "no" / "file", "x")
    old = os.umask(0o022)
    try:
        new = tmp_path / "new.xml"
        write_text(new, "a")
        assert stat.S_IMODE(new.stat().st_mode) == 0o644
        new.chmod(0o640)
        write_text(new, "b")  # an existing file keeps its mode
        assert stat.S_IMODE(new.stat().st_mode) == 0o640 and new.read_text() == "b"
    finally:
        os.umask(old)
    link = tmp_path / "link.xml"
    link.symlink_to(new)
    write_text(link, "through")
    assert link.is_symlink() and new.read_text() == "through"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "link.xml", "new.xml"]  # no temporary left


# --- proof check, verify, show, bounds --------------------------------------------------------------

def test_proof_check_deeply_nested_json(capsys, tmp_path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200000)
    code, out, _ = cli(capsys, "proof", "check", deep)
    assert code == 2 and "nested too deeply" in out


def test_verify_jobs_bounded(capsys, tmp_path) -> None:
    code, _, err = cli(capsys, "verify", "--jobs", "100000", tmp_path)
    assert code == 2 and "--jobs" in err


@pytest.mark.parametrize("args, option", [
    (["show", "collective", "alltoall", "-n", "4096"], "--max-cells"),
    (["bounds", "-t", "ring:4096", "-c", "alltoall"], "--max-ranks"),
    (["bounds", "-t", "ring:300", "-c", "allgather"], "--max-ranks"),
    (["show", "topology", "ring:300", "--draw", "x.svg"], "--max-ranks"),
    (["show", "topology", "ring:64", "--max-links", "100"], "--max-links"),
])
def test_size_limits_name_the_option_that_raises_them(capsys, args, option) -> None:
    code, _, err = cli(capsys, *args)
    assert code == 2 and option in err


@pytest.mark.parametrize("args", [["fully-connected:4096"]])
def test_generated_and_composed_links_are_bounded(capsys, args) -> None:
    code, _, err = cli(capsys, "show", "topology", *args)
    assert code == 2 and "links" in err


def test_composed_links_are_bounded_before_composing(capsys) -> None:
    from smtcoll import library
    from smtcoll.errors import ModelError

    with pytest.raises(ModelError, match="links"):  # the library refuses it, whoever calls it
        library.topology("dgx2", 256)
    code, _, err = cli(capsys, "show", "topology", "dgx2", "--nodes", "256")
    assert code == 2 and "--nodes" in err  # the command line refuses it earlier: outside --nodes' range


def test_expression_generated_chunk_count_is_bounded(capsys, tmp_path) -> None:
    spec = tmp_path / "sq.toml"
    spec.write_text('[collective]\nname = "sq"\nchunks = "ranks*ranks*ranks"\npre = "rank == 0"\npost = "true"\n'
                    'address = "chunk"\n')
    code, _, err = cli(capsys, "show", "collective", spec, "-n", "200")
    assert code == 2 and "--max-cells" in err
    assert cli(capsys, "show", "collective", spec, "-n", "4", "--max-cells", "1000")[0] == 0


def test_the_executable_exits_with_the_internal_code(tmp_path) -> None:
    """The real entry point, with a memory cap: a bad argument is still a clean error."""
    r = subprocess.run([sys.executable, "-m", "smtcoll", "synth", "-t", "ring:4", "-c", "allgather",
                        "--timeout", "nan"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
