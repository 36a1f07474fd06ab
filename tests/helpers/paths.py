"""The repository, the shared corpus beside it, and running the CLI as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The team's shared corpus: where $SMTCOLL_SHARED says, else next to the repository. Every test that reads it
# goes through these names, so that pointing $SMTCOLL_SHARED elsewhere moves all of them.
SHARED = Path(os.environ.get("SMTCOLL_SHARED") or ROOT.parent / "shared")
CORPUS = SHARED / "corpus"
# A location given on purpose must exist: tests then fail instead of skipping silently with nothing checked.
REQUIRED = bool(os.environ.get("SMTCOLL_SHARED"))
ABSENT = f"the shared corpus is not at {CORPUS} (set $SMTCOLL_SHARED)"


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `python -m smtcoll ARGS` as a user would, capturing output."""
    return subprocess.run([sys.executable, "-m", "smtcoll", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=timeout)


def needs_corpus(path: Path = CORPUS) -> pytest.MarkDecorator:
    """Skip where the corpus (or `path` in it) is absent, unless $SMTCOLL_SHARED asked for it: then fail."""
    if REQUIRED and not path.exists():
        return pytest.mark.corpus_missing(f"{path} is missing ($SMTCOLL_SHARED)")
    return pytest.mark.skipif(not path.exists(), reason=ABSENT)


def corpus_params(items: Iterable[Any], folder: Path, arity: int = 1) -> list[Any]:
    """Parameters read from the corpus: never an empty list (pytest would pass it with nothing checked).

    Where `folder` is absent, one skipped parameter (failing when $SMTCOLL_SHARED asked for it); where it is
    present but yields nothing, one parameter that fails. `arity`: the number of names parametrized."""
    blank = (None,) * arity
    found = list(items)
    if found:
        return found
    if not folder.exists():
        return [pytest.param(*blank, marks=needs_corpus(folder), id="corpus-absent")]
    return [pytest.param(*blank, marks=pytest.mark.corpus_missing(f"{folder} holds no test files"), id="corpus-empty")]
