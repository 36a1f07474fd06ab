"""`smtcoll synth` as a user runs it: exit codes, JSON, schedule files, determinism, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from smtcoll.check.schedule import check_schedule_file

ROOT = Path(__file__).resolve().parents[2]


def synth(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "smtcoll", "synth", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_found_json_and_schedule_file(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    p = synth("-t", "ring:4", "-c", "allgather", "--format", "json", "-o", str(out))
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["status"] == "found" and d["steps"] == 2 and d["rounds"] == 2 and d["chunks"] == 1
    assert d["optimal"]["proved"] is True
    for key in ("points", "seconds", "lower_bound", "attempts"):
        assert key in d
    assert check_schedule_file(str(out)).verdict == "ok"


def test_deterministic_schedule_bytes(tmp_path: Path) -> None:
    files = []
    for i in range(2):
        f = tmp_path / f"s{i}.json"
        p = synth("-t", "dgx1", "-c", "allgather", "--steps", "3", "--rounds", "4", "--chunks", "3", "-o", str(f))
        assert p.returncode == 0, p.stderr
        files.append(f.read_bytes())
    assert files[0] == files[1]
    assert b"seconds" not in files[0]


def test_infeasible_instance_exits_1() -> None:
    p = synth("-t", "ring:4", "-c", "allgather", "--steps", "1")
    assert p.returncode == 1
    assert "proved: no schedule" in p.stdout


def test_least_steps_exhausted_exits_1() -> None:
    p = synth("-t", "line:8", "-c", "allgather", "--max-steps", "5", "--format", "json")
    assert p.returncode == 1
    d = json.loads(p.stdout)
    assert d["status"] == "infeasible"
    assert "no schedule with at most 5 steps" in d["message"]


def test_pareto_json_lists_why_each_point_was_pruned() -> None:
    p = synth("-t", "ring:4", "-c", "allgather", "--strategy", "pareto", "--max-chunks", "2", "--format", "json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["points"] and all(pt["status"] == "found" for pt in d["points"])
    assert d["pruned"] and all(pt["why"] for pt in d["pruned"])


def test_combining_allreduce_star4() -> None:
    p = synth("-t", "star:4", "-c", "allreduce", "--format", "json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["steps"] == 2


@pytest.mark.parametrize("args, words", [
    (["-t", "nosuch", "-c", "allgather"], "unknown topology"),
    (["-t", "ring:4", "-c", "nosuch"], "unknown collective"),
    (["-t", "ring:4", "-c", "allgather", "--chunks", "0"], "--chunks"),
    (["-t", "ring:4", "-c", "allgather", "--strategy", "instance"], "--steps"),
    (["-t", "ring:4", "-c", "allgather", "--steps", "3", "--rounds", "2"], "rounds"),
    (["-t", "ring:4", "-c", "reduce", "--root", "9"], "root"),
    (["-t", "ring:4", "-c", "allgather", "--strategy", "pareto", "--chunks", "2"], "--max-chunks"),
    (["-t", "ring:4", "-c", "allgather", "--timeout", "0"], "--timeout"),
    (["-t", "/nonexistent/topo.toml", "-c", "allgather"], "error"),
])
def test_bad_input_exits_2_without_traceback(args: list[str], words: str) -> None:
    p = synth(*args)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert words in p.stderr


def test_time_limit_exits_3_with_what_is_known() -> None:
    # DGX-1 Alltoall with 8 steps, 8 rounds, 3 chunks takes seconds; 0.2 s is not enough
    p = synth("-t", "dgx1", "-c", "alltoall", "--steps", "8", "--rounds", "8", "--chunks", "3", "--timeout", "0.2",
              "--format", "json")
    assert p.returncode == 3
    d = json.loads(p.stdout)
    assert d["status"] == "timeout" and d["lower_bound"]["steps"] == 2
