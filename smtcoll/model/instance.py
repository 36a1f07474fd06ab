"""Instance: the size of a k-synchronous schedule (steps S, rounds R >= S, chunks per input C).

`rounds=None` asks for S steps with any number of rounds (msccl-tools' `extra_rounds` left open): the
question the least-steps search asks; a schedule's own instance always has its rounds.
"""

from __future__ import annotations

import re

import attrs

from smtcoll.errors import ModelError


@attrs.frozen
class Instance:
    steps: int
    rounds: int | None = None
    chunks: int = 1

    def __attrs_post_init__(self) -> None:
        for field in ("steps", "rounds", "chunks"):
            value = getattr(self, field)
            if field == "rounds" and value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ModelError(field, f"must be an integer >= 1, got {value!r}")
        if self.rounds is not None and self.rounds < self.steps:
            raise ModelError("rounds", f"= {self.rounds}: rounds must be >= steps ({self.steps})")

    @property
    def extra_rounds(self) -> int | None:
        return None if self.rounds is None else self.rounds - self.steps

    @property
    def rounds_per_chunk(self) -> float | None:
        return None if self.rounds is None else self.rounds / self.chunks

    def label(self, collective: str, topology: str) -> str:
        """A name for this instance that is safe as a file name and an MSCCL `name` attribute, in the
        style of msccl-tools' output names: `allgather-dgx1-s3-r7-c6` (`r-any`: any rounds)."""
        def part(text: str) -> str:
            return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"

        rounds = "-any" if self.rounds is None else str(self.rounds)
        return f"{part(collective)}-{part(topology)}-s{self.steps}-r{rounds}-c{self.chunks}"
