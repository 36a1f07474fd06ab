"""Done-when of the pre-merge issue: a repository that uses the `smtcoll-verify` hook refuses a commit exactly
when it contains a wrong algorithm.

The hook runs with the real `pre-commit` (offline: a `repo: local` hook with `language: system`), declared
like `.pre-commit-hooks.yaml` declares it (same `files`, `pass_filenames`, `require_serial`); only the
entry is this checkout's `python -m smtcoll verify` instead of an installed `smtcoll` executable.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import paths

yaml = pytest.importorskip("yaml")
pytest.importorskip("pre_commit")

REPO = Path(__file__).resolve().parents[2]
CORPUS = paths.CORPUS / "msccl-xml"
CORRECT = ["mscclang/allgather_ring_4g_1ch_1i_LL.xml", "mscclang/simple_allreduce_ring_4g_1i.xml",
           "mscclang/alltoall_allpairs_4g_2i_LL.xml"]
WRONG = ["broken/ag_cnt_mismatch.xml", "broken/ag_dep_removed_race.xml", "mscclang/allgather_recdoubling_4g_2i_LL.xml"]

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus not present next to the repository"),
              pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")]


def hook_config() -> dict:
    (declared,) = [h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
                   if h["id"] == "smtcoll-verify"]
    assert declared["entry"].startswith("smtcoll verify") and declared["language"] == "python"
    hook = {k: declared[k] for k in ("id", "name", "files", "types_or", "pass_filenames", "require_serial")
            if k in declared}
    hook.update(entry=f"{sys.executable} -m {declared['entry']}", language="system")
    return {"repos": [{"repo": "local", "hooks": [hook]}]}


def sh(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PRE_COMMIT_HOME": str(cwd.parent / "pre-commit-home"),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_the_hook_fails_exactly_on_the_wrong_files(tmp_path: Path) -> None:
    repo = tmp_path / "algorithms-repo"
    (repo / "algorithms").mkdir(parents=True)
    assert sh(repo, "git", "init", "-q").returncode == 0
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(hook_config()))
    (repo / "README.txt").write_text("not an algorithm\n")
    # files the hook sees (types xml, json) that are not algorithms: skipped by the hook and by a directory walk
    (repo / "package.json").write_text('{"name": "x", "scripts": {"steps": "echo"}}\n')
    (repo / "pom.xml").write_text('<?xml version="1.0"?>\n<project><modelVersion>4.0.0</modelVersion></project>\n')
    (repo / "proofs").mkdir()
    shutil.copy(next((REPO / "proofs").glob("*.json")), repo / "proofs")
    names = {}
    for rel in CORRECT + WRONG:
        name = rel.replace("/", "__")
        shutil.copy(CORPUS / rel, repo / "algorithms" / name)
        names[rel] = f"algorithms/{name}"
    assert sh(repo, sys.executable, "-m", "pre_commit", "install").returncode == 0

    # every file at once: the hook fails, and the files it calls wrong are exactly the wrong ones
    sh(repo, "git", "add", ".")
    run = sh(repo, sys.executable, "-m", "pre_commit", "run", "--all-files")
    assert run.returncode == 1, run.stdout + run.stderr
    verdicts = dict(re.findall(r"^(algorithms/\S+\.xml): (ok|error|unusable)\b", run.stdout, re.M))
    assert {f for f, v in verdicts.items() if v != "ok"} == {names[r] for r in WRONG}
    assert {f for f, v in verdicts.items() if v == "ok"} == {names[r] for r in CORRECT}
    assert "README.txt" not in run.stdout and "Traceback" not in run.stdout + run.stderr
    for other in ("package.json", "pom.xml", "proofs/"):
        assert other not in run.stdout, run.stdout
    # CI's directory walk picks the same files as the hook
    walk = subprocess.run([sys.executable, "-m", "smtcoll", "verify", "--format", "json", "."], cwd=repo,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert {d["file"].removeprefix("./") for d in json.loads(walk.stdout)} == set(verdicts)

    # at commit time: a commit of only correct algorithms passes, each wrong one is refused on its own
    sh(repo, "git", "reset", "-q")
    sh(repo, "git", "add", ".pre-commit-config.yaml", "README.txt", *(names[r] for r in CORRECT))
    commit = sh(repo, "git", "commit", "-qm", "correct algorithms")
    assert commit.returncode == 0, commit.stdout + commit.stderr
    for rel in WRONG:
        sh(repo, "git", "add", names[rel])
        commit = sh(repo, "git", "commit", "-qm", f"add {rel}")
        assert commit.returncode != 0 and f"{names[rel]}: error" in commit.stdout + commit.stderr, commit.stderr
        sh(repo, "git", "reset", "-q")
    log = sh(repo, "git", "log", "--format=%s").stdout.split()
    assert log == ["correct", "algorithms"]
