"""The `smtcoll` command line: a typer app whose commands are thin shells over the library.

Each command lives in its own module here and registers itself on `app`.
"""

from __future__ import annotations

import sys

from smtcoll.cli.app import app, run_guarded
from smtcoll.cli import info  # noqa: F401  (registers list, show)
from smtcoll.cli import verify  # noqa: F401  (registers verify)
from smtcoll.cli import bounds  # noqa: F401  (registers bounds)
from smtcoll.cli import proof  # noqa: F401  (registers proof check)
from smtcoll.cli import lower  # noqa: F401  (registers lower)
from smtcoll.cli import synth  # noqa: F401  (registers synth)
from smtcoll.cli import sweep  # noqa: F401  (registers sweep)


def main() -> None:
    run_guarded(app, sys.argv[1:])
