"""The typer app, output helpers and the guard that turns errors into messages and exit codes."""

from __future__ import annotations

import enum
import json
import sys
from typing import Any

import typer

from smtcoll.errors import EXIT_UNUSABLE, SmtcollError

app = typer.Typer(
    name="smtcoll",
    help="Synthesize, prove and verify collective communication algorithms.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class Format(str, enum.Enum):
    text = "text"
    json = "json"


def print_json(data: Any) -> None:
    """One JSON document, keys in a fixed order (deterministic output)."""
    sys.stdout.write(json.dumps(data, indent=2) + "\n")


def fail(message: str, code: int = EXIT_UNUSABLE) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def run_guarded(application: typer.Typer, args: list[str]) -> None:
    """Run the app; a SmtcollError becomes `error: ...` and its exit code, never a traceback.

    typer itself turns usage errors into exit code 2 and `typer.Exit(code)` into that code."""
    try:
        application(args=args, prog_name="smtcoll")
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
        sys.exit(130)
