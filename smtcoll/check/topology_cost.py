"""A program on a topology: every connection mapped to a link, chunks per link, and an alpha-beta time.

Each connection (a -> b, channel) must use a link a -> b of the topology (`missing-link` otherwise). The
time estimate runs the program once more with timing: a message of one chunk leaves when its thread block
is ready and its link is free, occupies the link for `chunk_bytes / gbps`, and arrives `alpha_us` later;
local copies and reductions are free. When some link used has no `alpha_us`/`gbps`, the estimate is in
rounds instead (one chunk takes 1/bandwidth rounds, no latency).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from smtcoll.check.execution import TbInput
from smtcoll.model import Topology
from smtcoll.msccl.program import Finding

DEFAULT_CHUNK_BYTES = 1 << 20  # the chunk size the microsecond estimate is given for


def link_load(tbs: Sequence[TbInput], topo: Topology, nchannels: int) -> tuple[list[Finding], dict[tuple[int, int], list[int]]]:
    """Findings for connections without a link, and (chunks, messages) sent over each link."""
    findings: list[Finding] = []
    load: dict[tuple[int, int], list[int]] = {}
    missing: set[tuple[int, int]] = set()
    for t in tbs:
        if t.send < 0 or not 0 <= t.chan < nchannels:
            continue
        link = (t.rank, t.send)
        sends = [tr for tr in t.trans if tr.sends]
        if not sends:
            continue
        if not topo.has_link(*link) and link not in missing:
            missing.add(link)
            findings.append(Finding("missing-link", f"gpu {t.rank} sends to gpu {t.send} but topology {topo.name!r} has "
                                    f"no link {t.rank} -> {t.send}", {"gpu": t.rank, "tb": t.tb_id,
                                                                       "line": sends[0].line}))
        entry = load.setdefault(link, [0, 0])
        entry[0] += sum(tr.cnt for tr in sends)
        entry[1] += len(sends)
    return findings, load


def timing(topo: Topology, links: Sequence[tuple[int, int]],
           chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> tuple[dict[tuple[int, int], tuple[float, float]], str]:
    by_pair = {(lk.src, lk.dst): lk for lk in topo.links}
    used = [by_pair[x] for x in links if x in by_pair]
    if used and all(lk.alpha_us is not None and lk.gbps is not None for lk in used):
        return {(lk.src, lk.dst): (float(lk.alpha_us), chunk_bytes / (lk.gbps * 1e3))  # type: ignore[arg-type, operator]
                for lk in used}, "us"
    return {(lk.src, lk.dst): (0.0, 1.0 / lk.bandwidth) for lk in used}, "rounds"


def load_metrics(load: dict[tuple[int, int], list[int]]) -> list[dict[str, Any]]:
    return [{"src": s, "dst": d, "chunks": c, "messages": m} for (s, d), (c, m) in sorted(load.items())]
