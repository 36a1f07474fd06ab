"""The value sets that several commands and the Python API share, declared once (docs/cli.md).

`--runtime` (verify, lower, synth, sweep, and the API's `runtime=`): `auto`, `both`, `executor`, `legacy`;
`any` is kept as an alias of `auto` (verify used to spell it so). What each value means per command:

- auto (any): verify finds a file wrong only when no runtime accepts it (a refusal by one is a warning);
  lower and synth --xml write one file both runtimes accept when the collective allows it, else for the
  runtime that has it; sweep writes for the executor.
- both: verify finds a file wrong when either runtime refuses it; lower and synth --xml write one file both
  accept, or fail; sweep writes one folder per runtime.
- executor, legacy: that runtime only.
"""

from __future__ import annotations

from smtcoll.errors import UsageError

RUNTIMES = ("auto", "both", "executor", "legacy")
RUNTIME_ALIASES = {"any": "auto"}


def runtime(value: object, option: str = "--runtime") -> str:
    """The canonical spelling of a runtime choice; a UsageError names the choices (and the nearest)."""
    if isinstance(value, str):
        v = RUNTIME_ALIASES.get(value, value)
        if v in RUNTIMES:
            return v
    from smtcoll.library import did_you_mean

    hint = did_you_mean(value, list(RUNTIMES)) if isinstance(value, str) else None
    raise UsageError(option, f"expected one of {', '.join(RUNTIMES)} (or any, an alias of auto), got {value!r}"
                     + (f"; did you mean {hint!r}?" if hint else ""))


def checked_collective(value: str, option: str = "--collective") -> str:
    """What `verify --collective` and `verify(collective=...)` take: a built-in postcondition name or a spec
    file (a `.toml` name, or an existing file); anything else is refused with the nearest name."""
    from pathlib import Path

    from smtcoll.check.postconditions import BUILTIN

    if value.endswith(".toml") or Path(value).is_file() or value in BUILTIN:
        return value
    from smtcoll.library import did_you_mean

    hint = did_you_mean(value, sorted(BUILTIN))
    raise UsageError(option, f"{value!r}: not a built-in postcondition" + (f"; did you mean {hint!r}?" if hint else "")
                     + f" ({', '.join(sorted(BUILTIN))}) nor a .toml spec file")


def checked_runtime(value: object, option: str = "--runtime") -> str:
    """What the checker takes: `any` (wrong only when no runtime accepts the file), `both` (wrong when either
    refuses it), `executor` or `legacy`."""
    v = runtime(value, option)
    return "any" if v == "auto" else v
