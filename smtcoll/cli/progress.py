"""Signs of life during synthesis, on stderr and only for a person watching a terminal: a spinner with the
elapsed time of the running solver call (rich redraws it from its own thread while z3 works, since z3's
C calls release the GIL), and one line per finished call with its verdict."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from smtcoll.synth.result import Attempt

COLORS = {"sat": "green", "unsat": "yellow", "timeout": "red"}


def attempt_line(a: Attempt) -> str:
    rounds = "any" if a.rounds is None else str(a.rounds)
    return (f"  steps {a.steps:>3}  rounds <= {rounds:>4}  chunks {a.chunks:>2}  {a.method:<9}  "
            f"[{COLORS.get(a.verdict, 'white')}]{a.verdict:<8}[/]  {a.seconds:7.2f} s")


@contextmanager
def solver_progress(console: Console | None = None) -> Iterator[Callable[[Attempt], None] | None]:
    """Yields the callback the strategies call after each solver call, or None when stderr is not a
    terminal (CI logs, pipes, tests): then nothing is printed at all. `console` is for tests."""
    if console is None:
        if not sys.stderr.isatty():
            yield None
            return
        from rich.console import Console

        console = Console(stderr=True, highlight=False)
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns: list[Any] = [SpinnerColumn(), TextColumn("solver call {task.fields[call]}"), TimeElapsedColumn()]
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("solving", total=None, call=1)
        calls = 0

        def show(a: Attempt) -> None:
            nonlocal calls
            calls += 1
            bar.console.print(attempt_line(a))
            bar.reset(task, call=calls + 1)  # the elapsed time restarts with the next call

        yield show
