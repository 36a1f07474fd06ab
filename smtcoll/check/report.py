"""The checker's result for one file: a verdict, violations with their place, and metrics.

`Report.to_json()` is the stable contract of `smtcoll verify --format json` (DESIGN.md):
`{"file", "verdict", "format", "collective", "ranks", "runtimes", "violations": [{"code", "severity",
"message", "where"}], "metrics", "time"}`. `format` names the input format read; `time` is None or
`{"claimed", "verified", "alpha_beta", "bound"}`, each None or `{"value", "unit", "model"}` (docs/verify.md).
"""

from __future__ import annotations

from typing import Any

import attrs

from smtcoll.vocabulary import Severity, Verdict

# Order of the keys of a place, as they are printed.
PLACE_KEYS = ("mode", "gpu", "tb", "step", "send", "line")


@attrs.frozen
class Violation:
    """One finding. `code` is a stable kebab-case identifier (e.g. `deadlock`, `race`,
    `postcondition`); `where` is the place: any of mode, gpu, tb, step, send, line."""

    code: str
    message: str
    severity: Severity = "error"
    where: dict[str, Any] = attrs.field(factory=dict, converter=dict)

    def place(self) -> str:
        parts = [f"{k} {self.where[k]}" for k in PLACE_KEYS if k in self.where]
        parts += [f"{k} {v}" for k, v in sorted(self.where.items()) if k not in PLACE_KEYS]
        return ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "severity": self.severity, "message": self.message,
                "where": {k: self.where[k] for k in sorted(self.where)}}


@attrs.frozen
class Report:
    """`unusable` marks input that could not be read at all (exit code 2); otherwise the verdict is
    `error` when any violation has severity error, else `ok`."""

    file: str
    collective: str | None = None
    ranks: int | None = None
    runtimes: dict[str, bool] | None = None
    violations: tuple[Violation, ...] = attrs.field(default=(), converter=tuple)
    metrics: dict[str, Any] = attrs.field(factory=dict, converter=dict)
    unusable: bool = False
    format: str | None = None
    time: dict[str, Any] | None = None

    @property
    def verdict(self) -> Verdict:
        if self.unusable:
            return "unusable"
        if any(v.severity == "error" for v in self.violations):
            return "error"
        return "ok"

    @property
    def errors(self) -> list[Violation]:
        return [v for v in self.violations if v.severity == "error"]

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "verdict": self.verdict,
            "format": self.format,
            "collective": self.collective,
            "ranks": self.ranks,
            "runtimes": self.runtimes,
            "violations": [v.to_json() for v in self.violations],
            "metrics": {k: self.metrics[k] for k in sorted(self.metrics)},
            "time": self.time,
        }
