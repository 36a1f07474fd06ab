"""Option values converted without pydantic when they are plainly valid.

typer 0.29 converts every parameter of a command, defaults included, through a pydantic `TypeAdapter` it
builds on each run: for `smtcoll verify` 21 adapters and pydantic's import, a third of its start-up
(docs/benchmarks.md). The values our commands take are a few plain kinds (str, bool, int and float with
bounds, an enum of choices, a path, lists of these), and a valid one converts the same way in a line.
Anything else — a value out of range, not a number, not a choice — goes to typer's own conversion, so
every error message stays typer's, word for word. `tests/cli/test_coercion.py` checks that both paths give
the same value on every parameter of every command.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

_DIGITS = re.compile(r"[0-9]{1,18}")
_DECIMAL = re.compile(r"[0-9]{1,15}(\.[0-9]{1,15})?")


class _Fallback(Exception):
    """The value is not plainly valid: typer's own conversion decides (and words the error)."""


def _scalar(annotation: Any, info: Any, value: Any, param: Any, ctx: Any) -> Any:
    """`value` converted as typer 0.29 converts a valid value of `annotation`, or _Fallback."""
    if annotation is str:
        if isinstance(value, str):
            return value
    elif annotation is bool:
        if isinstance(value, bool):
            return value
    elif annotation is int or annotation is float:
        text = isinstance(value, str) and (_DIGITS if annotation is int else _DECIMAL).fullmatch(value)
        if not (text or type(value) is int or (annotation is float and type(value) is float)):
            raise _Fallback
        number = annotation(value)
        if info.clamp or (info.min is not None and number < info.min) or (info.max is not None and number > info.max):
            raise _Fallback
        return number
    elif isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        from typer._param_types import coerce_cli_choice

        try:
            return coerce_cli_choice(value, choices=list(annotation), case_sensitive=info.case_sensitive, ctx=ctx)
        except ValueError:
            raise _Fallback from None
    elif annotation is Path and info.parser is None:
        if isinstance(value, str) and value and "\0" not in value:
            value = Path(value)
        if isinstance(value, Path):
            from typer._param_types import coerce_cli_path

            try:
                return coerce_cli_path(value, info, path_type=Path, param=param, ctx=ctx)
            except Exception:  # a path option's check failed: typer words it, naming the value as given
                raise _Fallback from None
    raise _Fallback


def _plain(annotation: Any) -> bool:
    plain = annotation in (str, bool, int, float, Path)
    return plain or (isinstance(annotation, type) and issubclass(annotation, enum.Enum))


def install() -> None:
    """Route typer's conversion through `_scalar` first. Only for the typer that converts through pydantic
    (0.29, pinned in pyproject.toml); any other typer is left as it is."""
    try:
        import typer.core
        from typer._coercion import RuntimeParam, TypeDescriptor, build_runtime_param
    except ImportError:
        return
    if getattr(typer.core, "build_runtime_param", None) is not build_runtime_param:
        return

    @dataclass(frozen=True)
    class PlainRuntimeParam(RuntimeParam):
        descriptor: TypeDescriptor

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            try:
                if get_origin(self.annotation) is list:
                    if not isinstance(value, list | tuple):
                        raise _Fallback
                    (item,) = get_args(self.annotation)
                    return [_scalar(item, self.parameter_info, v, param, ctx) for v in value]
                return _scalar(self.annotation, self.parameter_info, value, param, ctx)
            except _Fallback:
                return build_runtime_param(self.descriptor)._coerce_value(value, param, ctx)

    def build(descriptor: TypeDescriptor) -> RuntimeParam:
        annotation, info = descriptor.annotation, descriptor.parameter_info
        items = get_args(annotation) if get_origin(annotation) is list else (annotation,)
        if descriptor.file_annotation is None and info.parser is None and len(items) == 1 and _plain(items[0]):
            return PlainRuntimeParam(parameter_info=info, annotation=annotation, descriptor=descriptor)
        return build_runtime_param(descriptor)

    typer.core.build_runtime_param = build
