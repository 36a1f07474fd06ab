"""The independent checker: everything smtcoll believes about correctness, and nothing else.

It never imports `smtcoll.synth` or z3 (an import-linter contract enforces this): every fact it needs is
re-derived here by its own simulation. Its front door is `check(source, CheckRequest) -> Report`
(`door.py`, `request.py`), loaded on first use so that importing one checker module stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smtcoll.check.door import check
    from smtcoll.check.request import CheckRequest

__all__ = ["CheckRequest", "check"]


def __getattr__(name: str) -> Any:
    if name == "check":
        from smtcoll.check.door import check

        return check
    if name == "CheckRequest":
        from smtcoll.check.request import CheckRequest

        return CheckRequest
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
