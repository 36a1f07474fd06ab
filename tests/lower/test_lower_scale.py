"""Schedules at scale that run (issue 24): a 256-rank schedule lowered by `synth --xml` and re-checked
from its files, end to end through the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def smtcoll(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "smtcoll", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow  # about 10 CPU seconds (synthesis 1, lowering 3, checking the program 5); longer when loaded
def test_256_ranks_synth_lowers_verifies_and_reverifies_from_files(tmp_path: Path) -> None:
    s, x = tmp_path / "s.json", tmp_path / "s.xml"
    p = smtcoll("synth", "-t", "torus2d:16x16", "-c", "allgather", "-o", s, "--xml", x, "--format", "json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["steps"] == 64 and d["xml"]["written"] is True and x.is_file()
    # the default limits guard `verify` against hostile files and name the option that lifts them
    p = smtcoll("verify", x)
    assert p.returncode == 2 and "--max-" in p.stdout + p.stderr
    p = smtcoll("verify", x, "--max-steps", "200000", "--max-chunks", "65536", "--format", "json")
    assert p.returncode == 0, p.stdout[-2000:]
    (r,) = json.loads(p.stdout)
    # both runtimes accept it: every thread block within their step limits (64 for the executor)
    assert r["verdict"] == "ok" and r["runtimes"] == {"executor": True, "legacy": True}
    m = r["metrics"]
    assert m["gpus"] == 256 and m["nchannels"] == 2 and m["steps"] == 130816
    p = smtcoll("verify", s, "--format", "json")
    assert p.returncode == 0 and json.loads(p.stdout)[0]["verdict"] == "ok"
