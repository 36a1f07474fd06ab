"""The typer app, output helpers and the guard that turns errors into messages and exit codes."""

from __future__ import annotations

import json
import os
import sys
from typing import Annotated, Any

import typer

from smtcoll._version import __version__
from smtcoll.cli.options import Format  # noqa: F401  (re-exported: commands import it from here)
from smtcoll.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_UNUSABLE, InternalError, MemoryLimit, SmtcollError

app = typer.Typer(
    name="smtcoll",
    help="Synthesize, prove and verify collective communication algorithms.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"smtcoll {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, metavar="",
                                                help="print the version and exit")] = False) -> None:
    """Synthesize, prove and verify collective communication algorithms."""


def print_json(data: Any) -> None:
    """One JSON document, keys in a fixed order (deterministic output)."""
    sys.stdout.write(json.dumps(data, indent=2) + "\n")


def fail(message: str, code: int = EXIT_UNUSABLE) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


TRACEBACK_ENV = "SMTCOLL_TRACEBACK"  # set to 1 to print the traceback of an internal error on stderr


def run_guarded(application: typer.Typer, args: list[str]) -> None:
    """Run the app; every exception ends as a message and an exit code (smtcoll/errors.py), never a traceback.

    typer itself turns usage errors into exit code 2 and `typer.Exit(code)` into that code."""
    try:
        application(args=args, prog_name="smtcoll")
    except InternalError as e:
        _internal(e, args, str(e))
    except SmtcollError as e:
        typer.echo(f"error: {e}", err=True)
        sys.exit(e.exit_code)
    except ImportError as e:  # a package of an extra the light install leaves out (smtcoll.cli.extras)
        from smtcoll.cli.extras import missing_extra

        message = missing_extra(e, next((a for a in args if not a.startswith("-")), None))
        if message is None:
            raise
        typer.echo(f"error: {message}", err=True)
        sys.exit(EXIT_UNUSABLE)
    except KeyboardInterrupt:
        typer.echo("error: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except MemoryError:
        # the memory cap (RLIMIT_AS, see smtcoll/limits.py) turned an allocation into an exception
        typer.echo("error: out of memory: the memory cap was reached (raise it with --max-memory where the "
                   "command has it, or make the instance smaller)", err=True)
        sys.exit(MemoryLimit.exit_code)
    except Exception as e:
        _internal(e, args, f"{type(e).__name__}: {str(e)[:300]}")


def _internal(error: BaseException, args: list[str], what: str) -> None:
    """`internal error: ...` with what to report: the command line, the version and the traceback (in a
    temporary file, or on stderr when SMTCOLL_TRACEBACK=1)."""
    import shlex
    import tempfile  # here, as the two below: start-up every command would pay, used only for a bug's report
    import traceback

    text = "".join(traceback.format_exception(error))
    where = "above"
    if os.environ.get(TRACEBACK_ENV) == "1":
        typer.echo(text, err=True, nl=False)
    else:
        try:
            fd, path = tempfile.mkstemp(prefix="smtcoll-traceback-", suffix=".txt")
            with os.fdopen(fd, "w") as f:
                f.write(f"smtcoll {__version__}\ncommand: smtcoll {shlex.join(args)}\n\n{text}")
            where = f"in {path}"
        except OSError:
            where = f"not saved (set {TRACEBACK_ENV}=1 to print it)"
    msg = what if what.startswith("internal error") else f"internal error: {what}"
    typer.echo(f"{msg}\nThis is a bug in smtcoll {__version__}. Please report it with the command line "
               f"(smtcoll {shlex.join(args)}), the input files and the traceback ({where}).", err=True)
    sys.exit(EXIT_INTERNAL)
