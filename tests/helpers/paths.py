"""The repository, the shared corpus beside it, and running the CLI as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# the team's shared corpus: next to the repository, or where SMTCOLL_SHARED says
SHARED = Path(os.environ.get("SMTCOLL_SHARED", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus"


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `python -m smtcoll ARGS` as a user would, capturing output."""
    return subprocess.run([sys.executable, "-m", "smtcoll", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=timeout)


def needs_corpus() -> pytest.MarkDecorator:
    return pytest.mark.skipif(not CORPUS.is_dir(), reason="shared/corpus is not next to the repository")
