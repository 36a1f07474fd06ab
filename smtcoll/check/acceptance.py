"""Which ranks each runtime accepts, from the reader's and the parse rules' findings.

A refusal found by the reader or by a rule about the whole file holds for every rank (every rank reads
every byte); one found in a `<gpu>` element holds for the rank that loads it (`where["gpu"]`). The
differential test compares this with what the runtimes' own parsers do, rank by rank.
"""

from __future__ import annotations

from collections.abc import Iterable

from smtcoll.msccl.program import RUNTIMES, Finding


def accepted_ranks(findings: Iterable[Finding], ngpus: int) -> dict[str, dict[int, bool]]:
    """runtime -> rank -> accepted, for ranks 0..ngpus-1."""
    out: dict[str, dict[int, bool]] = {r: dict.fromkeys(range(max(ngpus, 1)), True) for r in RUNTIMES}
    for f in findings:
        if not f.rejects:
            continue
        gpu = f.where.get("gpu")
        for runtime in f.rejects:
            ranks = out[runtime]
            if isinstance(gpu, int):
                if gpu in ranks:
                    ranks[gpu] = False
            else:
                for rank in ranks:
                    ranks[rank] = False
    return out
