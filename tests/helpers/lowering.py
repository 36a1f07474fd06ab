"""A lowering that produces a wrong program, to test that nothing unverified is ever written."""

from __future__ import annotations

from typing import Any

import attrs
import pytest


def break_lowering(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make `smtcoll.lower.files.lower` drop the last step of rank 0's first thread block."""
    import smtcoll.lower.files as files

    real = files.lower

    def broken(schedule: Any, options: Any) -> Any:
        lowered = real(schedule, options)
        g = lowered.program.gpus[0]
        tb = attrs.evolve(g.tbs[0], steps=g.tbs[0].steps[:-1])
        gpus = (attrs.evolve(g, tbs=(tb, *g.tbs[1:])), *lowered.program.gpus[1:])
        return attrs.evolve(lowered, program=attrs.evolve(lowered.program, gpus=gpus))

    monkeypatch.setattr(files, "lower", broken)
