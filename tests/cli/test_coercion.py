"""Option values converted without pydantic (smtcoll/cli/coercion.py) equal typer's own conversion.

Every parameter of every command is fed valid and invalid values through both paths: the same value of the
same type, or the same error message. Invalid values must reach typer's conversion (pydantic's wording)."""

from __future__ import annotations

import enum
import importlib
from pathlib import Path
from typing import Any, get_args, get_origin

import pytest
import typer
import typer.core
from typer._click import Context
from typer._click.exceptions import BadParameter
from typer._coercion import build_runtime_param

from smtcoll.cli import COMMANDS, app
from smtcoll.cli.coercion import install

for _module in sorted(set(COMMANDS.values())):
    importlib.import_module(f"smtcoll.cli.{_module}")

SAMPLES: dict[Any, list[Any]] = {
    str: ["abc", "", "ring:4", "-x", "ü"],
    bool: [True, False, "yes", "0"],
    int: ["0", "1", "7", "007", "64", "65", "1025", "-1", "+5", " 5", "5_0", "1e3", "1.0", "abc", "", 3, 0,
          10**30, "9" * 30, 2.0],
    float: ["0", "1.5", "300", "0.25", "1e3", "-2", "abc", "", "1.", ".5", 300, 2.5, 0],
    Path: ["a.xml", "", ".", "/nonexistent/x", Path("x")],
}


def samples(annotation: Any) -> list[Any]:
    if get_origin(annotation) is list:
        (item,) = get_args(annotation)
        return [tuple(samples(item)[:3]), (), [samples(item)[0]], "not-a-list"]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return [*annotation, *(m.value for m in annotation), *(m.value.upper() for m in annotation), "bogus", ""]
    return SAMPLES[annotation]


def parameters() -> list[tuple[str, Any, Any]]:
    root = typer.main.get_command(app)
    found: list[tuple[str, Any, Any]] = []

    def walk(cmd: Any, path: str) -> None:
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            walk(sub, f"{path} {name}".strip())
        found.extend((f"{path or 'smtcoll'} {p.name}", cmd, p) for p in cmd.params if hasattr(p, "type_descriptor"))

    walk(root, "")
    return found


def outcome(runtime: Any, value: Any, param: Any, ctx: Context) -> tuple[str, Any]:
    try:
        result = runtime._coerce_value(value, param, ctx)
    except BadParameter as e:
        return "error", e.format_message()
    return type(result).__name__, result


PARAMETERS = parameters()


def test_every_command_parameter_is_covered() -> None:
    assert len(PARAMETERS) > 80  # all commands' options (walking the lazily registered commands worked)
    assert typer.core.build_runtime_param is not build_runtime_param, "the fast path is not installed"


@pytest.mark.parametrize(("name", "command", "param"), PARAMETERS, ids=[p[0] for p in PARAMETERS])
def test_fast_conversion_equals_typers(name: str, command: Any, param: Any, tmp_path: Path) -> None:
    descriptor = param.type_descriptor
    fast, slow = typer.core.build_runtime_param(descriptor), build_runtime_param(descriptor)
    ctx = Context(command, info_name="smtcoll")
    for value in samples(descriptor.annotation):
        assert outcome(fast, value, param, ctx) == outcome(slow, value, param, ctx), (name, value)


def test_install_is_idempotent_and_keeps_typers_path() -> None:
    before = typer.core.build_runtime_param
    install()  # already installed at import: a second call changes nothing
    assert typer.core.build_runtime_param is before
