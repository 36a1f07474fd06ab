"""A program on a topology: every connection mapped to a link, chunks per link, and an alpha-beta time.

Each connection (a -> b, channel) must use a link a -> b of the topology (`missing-link` otherwise). The
time estimate runs the program once more with timing: a message of one chunk leaves when its thread block
is ready and its link is free, occupies the link for `chunk_bytes / gbps`, and arrives `alpha_us` later;
local copies and reductions are free. When some link used has no `alpha_us`/`gbps`, the estimate is in
rounds instead (one chunk takes 1/bandwidth rounds, no latency).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from smtcoll import collectives, library
from smtcoll.check import buffers, postconditions
from smtcoll.check.execution import TbInput, execute
from smtcoll.check.transmissions import lower as lower_tb
from smtcoll.errors import SmtcollError
from smtcoll.model import Collective, Topology
from smtcoll.model.timed import BoundFn, group_gbps
from smtcoll.msccl.program import Finding, Program
from smtcoll.msccl.runtime import FIFO_MESSAGES

DEFAULT_CHUNK_BYTES = 1 << 20  # the chunk size the microsecond estimate is given for


def link_load(tbs: Sequence[TbInput], topo: Topology,
              nchannels: int) -> tuple[list[Finding], dict[tuple[int, int], list[int]]]:
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
            findings.append(Finding("missing-link", f"gpu {t.rank} sends to gpu {t.send} but topology "
                                    f"{topo.name!r} has no link {t.rank} -> {t.send}",
                                    where={"gpu": t.rank, "tb": t.tb_id, "line": sends[0].line}))
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



def apply_sharing(metrics: dict[str, Any], topo: Topology, load: dict[tuple[int, int], list[int]]) -> None:
    """Switch groups and NIC sharing on top of the per-link estimate.

    The execution estimate serializes each link; links that share an NVSwitch port or a NIC (a switch
    group) also share its rate, so the estimate is at least the busiest group's chunks x chunk / rate plus
    the smallest alpha of its links. `switch_groups` lists the busiest groups."""
    est = metrics.get("estimate")
    if est is None or est.get("unit") != "us":
        return
    groups: list[dict[str, Any]] = []
    for g, grp in enumerate(topo.switches):
        used = [(s, d) for (s, d) in load if s in grp.srcs and d in grp.dsts]
        chunks = sum(load[x][0] for x in used)
        rate = group_gbps(topo, grp)
        if not chunks or not rate:
            continue
        alphas = [lk.alpha_us or 0.0 for lk in topo.links if (lk.src, lk.dst) in used]
        t = chunks * DEFAULT_CHUNK_BYTES / (rate * 1e3) + min(alphas, default=0.0)
        groups.append({"group": grp.name or str(g), "chunks": chunks, "gbps": round(rate, 6), "time": round(t, 6)})
    groups.sort(key=lambda x: (-x["time"], x["group"]))
    if groups:
        metrics["switch_groups"] = groups[:5]
        if groups[0]["time"] > est["time"]:
            est["link_only_time"] = est["time"]
            est["time"] = groups[0]["time"]
            est["limited_by"] = f"switch group {groups[0]['group']}"


def program_collective(name: str | None, ranks: int, chunks_per_loop: int) -> Collective | None:
    """The built-in unrooted collective of a program (the program names no root), with its chunk multiplier C
    from the chunks per loop: one address per chunk, or a rank's share when its row says `per_rank_loop`."""
    kind = collectives.get(name)
    if kind is None or kind.rooted:
        return None
    per = chunks_per_loop // max(1, ranks) if kind.per_rank_loop else chunks_per_loop
    if per < 1:
        return None
    try:
        return library.collective(kind.name, ranks, None, per)
    except SmtcollError:
        return None


def program_time(report: Any, topology: Topology | None = None, bound: BoundFn | None = None) -> dict[str, Any] | None:
    """The `time` object of an XML program's report: no claim (XML states none); the alpha-beta estimate;
    the bound for its collective and 1 MiB chunks when `bound` is given."""
    est = report.metrics.get("estimate")
    if est is None:
        return None
    ab = {"value": est["time"], "unit": est["unit"], "model": "alpha-beta estimate of the program"}
    b = None
    if bound is not None and topology is not None and est["unit"] == "us":
        coll = program_collective(report.collective, report.ranks or 0, report.metrics.get("nchunksperloop") or 0)
        if coll is not None and coll.ranks == topology.ranks:
            b = bound(topology, coll, DEFAULT_CHUNK_BYTES)
    return {"claimed": None, "verified": None, "alpha_beta": ab, "bound": b}


def program_thread_blocks(p: Program) -> list[TbInput]:
    """The thread blocks of a read or lowered program, as the execution runs them (`check.program`)."""
    tbs: list[TbInput] = []
    seen: set[int] = set()
    for g in sorted(p.gpus, key=lambda g: g.id if g.id is not None else -1):
        if g.id is None or g.id in seen:
            continue
        seen.add(g.id)
        for tb in g.tbs:
            assert tb.id is not None and tb.send is not None and tb.recv is not None and tb.chan is not None
            tbs.append(TbInput(g.id, tb.id, tb.send, tb.recv, tb.chan, tuple(lower_tb(tb))))
    return tbs


def program_makespan(p: Program, occupy: Callable[[tuple[int, int, int]], tuple[Any, tuple[tuple[Hashable, Any], ...]]],
                     tbs: Sequence[TbInput] | None = None, zero: Any = 0.0,
                     order: Callable[[Any], Any] | None = None, trace: list[int] | None = None,
                     replay: Sequence[int] | None = None) -> Any:
    """When the last thread block of `p` finishes, each chunk it sends holding the resources `occupy` gives
    for its connection (src, dst, channel) as `execution.execute` describes; the same run as the checker's
    estimate, with the caller's numbers and their serving `order`, recording the order it serves thread
    blocks in `trace` or serving them in the order `replay` gives (`execute`); None when it deadlocks."""
    assert p.ngpus is not None and p.nchunksperloop is not None and p.nchannels is not None
    tbs = program_thread_blocks(p) if tbs is None else tbs
    conns = {(t.rank, t.send, t.chan) for t in tbs if t.send >= 0}
    table = {c: occupy(c) for c in sorted(conns)}
    kind = p.coll if p.coll in postconditions.BUILTIN else "custom"
    geo = buffers.Geometry(kind, p.ngpus, p.nchunksperloop, False,
                           {g.id: (g.s_chunks or 0) for g in p.gpus if g.id is not None})
    run = execute(tbs, geo, p.nchannels, FIFO_MESSAGES.get(p.proto or "", 2), None, data=False, occupy=table,
                  zero=zero, order=order, trace=trace, replay=replay)
    return None if run.deadlock else run.makespan
