"""One finding type for every reader and check, and the one rule that caps long lists of them.

A `Finding` is what `smtcoll verify` reports (`violations[]` of `--format json`, docs/verify.md): a stable
kebab-case `code`, a message, a severity and a place. Readers of the MSCCL XML also say which runtimes
refuse the file because of it (`rejects`). A summary line ("... and N more race finding(s)") is a finding
too: it stands for `more` findings that are not listed, and it has *their* severity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from smtcoll.vocabulary import Severity

MAX_LISTED = 20  # findings of one code and severity listed before the rest are summarized


def _where(items: Mapping[str, Any]) -> dict[str, Any]:
    return dict(items)


def _str_set(items: Iterable[str]) -> frozenset[str]:
    return frozenset(items)


# Order of the keys of a place, as they are printed.
PLACE_KEYS = ("mode", "gpu", "tb", "step", "send", "line")


@attrs.frozen
class Finding:
    """One finding. `where` is the place: any of mode, gpu, tb, step, send, line (and `runtime`).
    `rejects` names the runtimes that refuse the file because of it (empty: no runtime refuses it and
    `severity` says how bad it is for the algorithm itself). `more` > 0 marks a summary standing for that
    many findings of the same code and severity that are not listed."""

    code: str
    message: str
    severity: Severity = "error"
    where: dict[str, Any] = attrs.field(factory=dict, converter=_where)
    rejects: frozenset[str] = attrs.field(default=frozenset(), converter=_str_set)
    more: int = 0

    def place(self) -> str:
        parts = [f"{k} {self.where[k]}" for k in PLACE_KEYS if k in self.where]
        parts += [f"{k} {v}" for k, v in sorted(self.where.items()) if k not in PLACE_KEYS]
        return ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "severity": self.severity, "message": self.message,
                "where": {k: self.where[k] for k in sorted(self.where)}}


class Capped:
    """Collects findings, keeping at most `limit` of each (code, severity); the others are only counted
    and come back as one summary per (code, severity) with that severity, right after the last listed
    finding of its kind. Summaries added (from a check that capped its own list) add their counts, so
    capping twice gives the same result as capping once."""

    def __init__(self, limit: int = MAX_LISTED) -> None:
        self.limit = limit
        self.listed: list[Finding] = []
        self.counts: dict[tuple[str, Severity], int] = {}
        self.hidden: dict[tuple[str, Severity], int] = {}

    def add(self, f: Finding) -> None:
        key: tuple[str, Severity] = (f.code, f.severity)
        if f.more:
            self.hidden[key] = self.hidden.get(key, 0) + f.more
            return
        n = self.counts.get(key, 0) + 1
        self.counts[key] = n
        if n <= self.limit:
            self.listed.append(f)
        else:
            self.hidden[key] = self.hidden.get(key, 0) + 1

    def extend(self, findings: Iterable[Finding]) -> Capped:
        for f in findings:
            self.add(f)
        return self

    def findings(self) -> list[Finding]:
        out = list(self.listed)
        for (code, severity), n in sorted(self.hidden.items()):
            last = max((i for i, f in enumerate(out) if f.code == code and f.severity == severity),
                       default=len(out) - 1)
            out.insert(last + 1, summary(code, severity, n))
        return out


def summary(code: str, severity: Severity, n: int) -> Finding:
    """The line that stands for `n` findings of one code and severity that are not listed."""
    return Finding(code, f"... and {n} more {code} finding(s)", severity, more=n)


def capped(findings: Iterable[Finding], limit: int = MAX_LISTED) -> list[Finding]:
    return Capped(limit).extend(findings).findings()
