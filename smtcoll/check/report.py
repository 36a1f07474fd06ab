"""The checker's result for one file: a verdict, violations with their place, and metrics.

`Report.to_json()` is the stable contract of `smtcoll verify --format json` (docs/verify.md):
`{"file", "verdict", "format", "collective", "ranks", "runtimes", "violations": [{"code", "severity",
"message", "where"}], "metrics", "time"}`. `format` names the input format read; `time` is None or
`{"claimed", "verified", "alpha_beta", "bound"}`, each None or `{"value", "unit", "model"}` (docs/verify.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from smtcoll.findings import Finding
from smtcoll.vocabulary import Verdict


def _violations(items: Iterable[Violation]) -> tuple[Violation, ...]:
    return tuple(items)


def _where(items: Mapping[str, Any]) -> dict[str, Any]:
    return dict(items)


# One finding type for every check (smtcoll/findings.py); a report calls them violations.
Violation = Finding


@attrs.frozen
class Report:
    """`unusable` marks input that could not be read at all (exit code 2); otherwise the verdict is
    `error` when any violation has severity error, else `ok`."""

    file: str
    collective: str | None = None
    ranks: int | None = None
    runtimes: dict[str, bool] | None = None
    violations: tuple[Violation, ...] = attrs.field(default=(), converter=_violations)
    metrics: dict[str, Any] = attrs.field(factory=dict, converter=_where)
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
