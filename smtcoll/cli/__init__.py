"""The `smtcoll` command line: a typer app whose commands are thin shells over the library.

Each command lives in its own module here and registers itself on `app`. The modules are imported only
when their command runs (or `--help` lists them), so that `smtcoll verify` and `smtcoll --version` do not pay
for the synthesizer's command modules at start-up: `COMMANDS` names the module of every command.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from smtcoll.cli.app import app, run_guarded
from smtcoll.cli.coercion import install as install_plain_coercion
from smtcoll.cli.extras import missing_extra
from smtcoll.errors import SmtcollError

# command (or command group) -> module of smtcoll.cli that registers it, in the order `--help` lists them
COMMANDS = {
    "list": "info",
    "show": "info",
    "synth": "synth",
    "bounds": "bounds",
    "proof": "proof",
    "lower": "lower",
    "verify": "verify",
    "sweep": "sweep",
}


# The type column of `--help`: typer 0.29 prints the Python type beside a metavar (`PATH <list[str]>`) and
# beside every flag (`--help <bool>`). Our metavars say what to give, and a flag takes nothing.
_option_type = TyperOption.display_type_rich


def _option_type_column(self: TyperOption, ctx: Any) -> str | None:
    return None if self.is_flag and self.metavar is None else _option_type(self, ctx)


def _argument_type_column(self: TyperArgument, ctx: Any) -> str | None:
    return None  # the argument's metavar is its name in the first column already


TyperOption.display_type_rich = _option_type_column  # type: ignore[method-assign]
TyperArgument.display_type_rich = _argument_type_column  # type: ignore[method-assign,assignment]


def _plain_choice_errors() -> None:
    """typer 0.29 words a bad choice through pydantic: "Value error, 'bogus' is not one of ...". The message
    is ours to print without pydantic's prefix. Only where this typer has the helper (other versions word it
    themselves)."""
    for name in ("typer._coercion", "typer._param_types"):
        module = sys.modules.get(name) or _import_quietly(name)
        original = getattr(module, "get_error_msg", None)
        if original is None or getattr(original, "_smtcoll", False):
            continue

        def plain(exc: Any, _original: Any = original) -> str:
            text = str(_original(exc))
            return text.removeprefix("Value error, ")

        plain._smtcoll = True  # type: ignore[attr-defined]
        module.get_error_msg = plain  # type: ignore[union-attr]


def _import_quietly(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


_plain_choice_errors()
install_plain_coercion()


class LazyGroup(TyperGroup):
    """The root group: imports a command's module the first time the command is looked up."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS) + [c for c in self.commands if c not in COMMANDS]

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """click says "No such command 'synt'." with no suggestion (while `show topolgy` gets one)."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in COMMANDS and name not in self.commands:
            from smtcoll.library import did_you_mean

            hint = did_you_mean(name, list(COMMANDS))
            if hint is not None:
                ctx.fail(f"No such command {name!r}; did you mean {hint!r}?")
        return super().resolve_command(ctx, args)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            try:
                importlib.import_module(f"smtcoll.cli.{COMMANDS[cmd_name]}")
            except ImportError as e:
                message = missing_extra(e, cmd_name)
                if message is None:
                    raise
                return _unavailable(cmd_name, message)
            self.commands.update(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
        return super().get_command(ctx, cmd_name)


def _unavailable(name: str, message: str) -> Any:
    """A stand-in for a command whose module needs a package that is not installed: listed by `--help`,
    and running it says what to install."""
    def refuse(*_: Any, **__: Any) -> None:
        raise SmtcollError(message)

    return TyperCommand(name, callback=refuse, help=f"(not installed) {message}", add_help_option=False,
                         context_settings={"ignore_unknown_options": True, "allow_extra_args": True})


app.info.cls = LazyGroup
if app.registered_callback is None:
    # the root must be a group even while no command module is imported yet (a root callback makes it one)
    @app.callback()
    def _root() -> None:
        """Synthesize, prove and verify collective communication algorithms."""


def main() -> None:
    from smtcoll import limits

    limits.APPLY_RLIMIT = True  # the memory cap of --max-memory applies to this process only
    run_guarded(app, sys.argv[1:])
