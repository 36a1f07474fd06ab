"""Checking a timed schedule (docs/formats.md): one checker for every timed format.

1. Every transfer names ranks of the topology, an address of the collective, and rides on links the
   topology has (`missing-link`).
2. Causality in time (`not-held`): replaying arrivals and departures in time order (an arrival at t comes
   before a departure at t), a rank sends a chunk only when it holds it at the send's *start*. With
   `conserve_volume` a relay can forward no more volume than it has received so far.
3. Values are sets of contributions, combined by the arrival rule of step schedules (`arrival.py`): for a
   combining collective an incoming value is added, taken, or is a `double-count`.
4. The postcondition on *every* rank of the collective (`postcondition`), not only ranks the file names.
5. Capacity in the format's cost model: every `Limit` of the schedule over the `Use`s of its transfers
   (`bandwidth`).
6. Times: `verified` is when the last required delivery completes in the format's own model; `alpha_beta`
   replays the transfers in our alpha-beta model (each link and switch group carries one chunk at a
   time); `bound` is `smtcoll.bounds`' time bound. A claim more than 1% below the verified time is an
   `optimistic-claim` error; more than 1% above, a `pessimistic-claim` info.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter, defaultdict
from fractions import Fraction
from itertools import accumulate
from typing import Any

from smtcoll.check.arrival import EMPTY, arrive
from smtcoll.check.report import Report, Violation
from smtcoll.findings import Capped
from smtcoll.model import Topology
from smtcoll.model.timed import BoundFn, Limit, Quantity, Time, TimedSchedule, group_gbps
from smtcoll.text import plural
from smtcoll.vocabulary import Severity

CLAIM_TOLERANCE = 0.01  # a claim within 1% of the verified time is accepted
EPS = 1e-9
VOLUME_EPS = 1e-6


class _Out(Capped):
    def report(self, code: str, message: str, where: dict[str, Any] | None = None,
                severity: Severity = "error") -> None:
        self.add(Violation(code, message, severity, where or {}))


def _fmt(x: float | Fraction) -> str:
    return f"{float(x):.6g}"


def check_timed(ts: TimedSchedule, file: str = "<schedule>", bound: BoundFn | None = None) -> Report:
    """`bound` gives the lower bound shown next to the times (the CLI passes `smtcoll bounds`' time bound)."""
    coll, topo = ts.collective, ts.topology
    out = _Out()
    out.extend(ts.findings)
    unit = ts.unit
    addresses = set(coll.addresses)
    valid: list[int] = []
    missing: set[tuple[int, int]] = set()
    for i, t in enumerate(ts.transfers):
        w = t.place
        if not (0 <= t.src < coll.ranks and 0 <= t.dst < coll.ranks):
            out.report("unknown-rank", f"transfer {t.src} -> {t.dst}: rank out of range (the topology has "
                                    f"{coll.ranks} ranks)", w)
            continue
        if t.src == t.dst:
            out.report("self-send", f"rank {t.src} sends chunk {t.chunk} to itself", w)
            continue
        if t.chunk not in addresses:
            out.report("unknown-address", f"chunk {t.chunk} does not exist in collective {coll.name!r} (it has "
                                       f"{len(addresses)} addresses)", w)
            continue
        if not t.end >= t.start:
            out.report("bad-time", f"transfer of chunk {t.chunk} {t.src} -> {t.dst} ends ({_fmt(t.end)} {unit}) before "
                                f"it starts ({_fmt(t.start)} {unit})", w)
            continue
        for a, b in t.links:
            if not topo.has_link(a, b):
                out.report("missing-link", f"transfer of chunk {t.chunk} {t.src} -> {t.dst} uses link {a} -> {b}, "
                                        f"which topology {topo.name!r} does not have", w)
                missing.add((a, b))
        valid.append(i)

    done = _replay(ts, valid, out)
    _postcondition(ts, done, out)
    for _limit, (code, message, where) in _capacity(ts, valid):
        out.report(code, message, where)

    time = _times(ts, done, out, bound)
    sends = len(ts.transfers)
    metrics: dict[str, Any] = {"transfers": sends, "topology": topo.name, "model": ts.model, "unit": unit}
    if ts.chunk_bytes is not None:
        metrics["chunk_bytes"] = ts.chunk_bytes
    busiest = _busiest(ts, valid)
    if busiest:
        metrics["links"] = busiest
    return Report(file, coll.name, coll.ranks, None, out.findings(), metrics, format=ts.format, time=time)


# --- causality, values ------------------------------------------------------------------------------

def _replay(ts: TimedSchedule, valid: list[int], out: _Out) -> dict[tuple[int, int], Time]:
    """Replay in time order; returns when each (rank, address) the postcondition needs first holds its
    required value (only those that do)."""
    coll = ts.collective
    need = _required(ts)
    events = []
    for i in valid:
        t = ts.transfers[i]
        events.append((t.start, 1, i))
        events.append((t.end, 0 if t.end > t.start else 2, i))
    events.sort()
    done: dict[tuple[int, int], Time] = {}
    if ts.conserve_volume:
        have: dict[tuple[int, int], Time] = defaultdict(float)
        got: dict[tuple[int, int], Time] = defaultdict(float)
        group = max(1, ts.volume_group)
        for r, c in coll.pre:
            have[(r, coll.address[c] // group)] += 1.0
        for time, kind, i in events:
            t = ts.transfers[i]
            key = (t.src, t.chunk // group)
            if kind == 1:
                have[key] -= t.volume
                if have[key] < -VOLUME_EPS:
                    first = key[1] * group
                    what = f"chunk {t.chunk}" if group == 1 else f"chunks {first}..{first + group - 1}"
                    out.report("not-held", f"rank {t.src} sends volume {_fmt(t.volume)} of chunk {t.chunk} at "
                                        f"{_fmt(t.start)} {ts.unit} but holds only {_fmt(have[key] + t.volume)} of "
                                        f"{what} by then", t.place)
                    have[key] = 0.0
            else:
                key = (t.dst, t.chunk)
                # the destination keeps what it needs (a sink); only the rest can be forwarded
                kept = min(t.volume, max(0.0, 1.0 - got[key])) if key in need else 0.0
                have[(t.dst, t.chunk // group)] += t.volume - kept
                got[key] += t.volume
                if key in need and key not in done and got[key] >= 1 - VOLUME_EPS:
                    done[key] = time
        for key in need:
            if key not in done and any(r == key[0] for r, c in coll.pre if coll.address[c] == key[1]):
                done[key] = 0.0
        return done

    value: dict[tuple[int, int], frozenset[int]] = {}
    for r, c in coll.pre:
        key = (r, coll.address[c])
        value[key] = value.get(key, frozenset()) | {c} if coll.is_combining else frozenset({c})
    for key, req in need.items():
        if _satisfies(coll.is_combining, value.get(key, frozenset()), req):
            done[key] = 0.0
    first_hold: dict[tuple[int, int], Time] = {}
    for i in valid:
        t = ts.transfers[i]
        k = (t.dst, t.chunk)
        first_hold[k] = min(first_hold.get(k, t.end), t.end)
    carried: dict[int, frozenset[int]] = {}
    for time, kind, i in events:
        t = ts.transfers[i]
        if kind == 1:
            held = value.get((t.src, t.chunk))
            if not held:
                later = first_hold.get((t.src, t.chunk))
                when = f"; it arrives there only at {_fmt(later)} {ts.unit}" if later is not None else \
                    "; it never arrives there"
                out.report("not-held", f"rank {t.src} sends chunk {t.chunk} to rank {t.dst} at {_fmt(t.start)} "
                                    f"{ts.unit} before it holds it{when}", t.place)
                continue
            carried[i] = held
            continue
        v = carried.get(i)
        if v is None:
            continue
        key = (t.dst, t.chunk)
        current, twice = arrive(coll.is_combining, value.get(key, EMPTY), v)
        if twice:
            out.report("double-count", f"rank {t.dst} would sum contribution(s) {sorted(twice)[:8]} to address "
                                       f"{t.chunk} twice (transfer from rank {t.src} ending at {_fmt(t.end)} "
                                       f"{ts.unit})", t.place)
        value[key] = current
        if key in need and key not in done and _satisfies(coll.is_combining, current, need[key]):
            done[key] = time
    return done


def _required(ts: TimedSchedule) -> dict[tuple[int, int], frozenset[int]]:
    coll = ts.collective
    req: dict[tuple[int, int], set[int]] = {}
    for r in range(coll.ranks):
        for c in coll.post_sets[r]:
            req.setdefault((r, coll.address[c]), set()).add(c)
    return {k: frozenset(v) for k, v in req.items()}


def _satisfies(combining: bool, have: frozenset[int], need: frozenset[int]) -> bool:
    return have == need if combining else bool(have & need)


def _postcondition(ts: TimedSchedule, done: dict[tuple[int, int], Time], out: _Out) -> None:
    coll = ts.collective
    for (r, a), need in sorted(_required(ts).items()):
        if (r, a) in done:
            continue
        what = f"chunk {min(need)}" + (f" (address {a})" if a != min(need) else "")
        if coll.is_combining:
            out.report("postcondition", f"rank {r} never holds the complete value at address {a} "
                                     f"(contributions {sorted(need)[:8]})", {"gpu": r})
        elif ts.conserve_volume:
            out.report("postcondition", f"rank {r} never receives the whole of {what}", {"gpu": r})
        else:
            out.report("postcondition", f"rank {r} never receives {what}", {"gpu": r})


# --- capacity ------------------------------------------------------------------------------------

def _capacity(ts: TimedSchedule, valid: list[int]) -> list[tuple[Limit, tuple[str, str, dict]]]:
    limits = {lim.resource: lim for lim in ts.limits}
    uses: dict[str, list[tuple[Time, Time, float, int]]] = defaultdict(list)
    for i in valid:
        for u in ts.transfers[i].uses:
            if u.resource in limits:
                uses[u.resource].append((u.start, u.end, u.amount, i))
    found = []
    for res in sorted(uses):
        lim = limits[res]
        items = uses[res]
        if lim.kind == "window":
            per: dict[int, float] = defaultdict(float)
            first: dict[int, int] = {}
            for s, _, amount, i in items:
                k = round(s)
                per[k] += amount
                first.setdefault(k, i)
            keys = sorted(per)
            prefix = list(accumulate((per[k] for k in keys), initial=0.0))
            for n, k in enumerate(keys):  # a window starting at a used epoch covers any other's uses
                total = prefix[bisect_left(keys, k + lim.window)] - prefix[n]
                if total > lim.capacity + VOLUME_EPS:
                    span = f"epoch {k}" if lim.window == 1 else f"epochs {k}..{k + lim.window - 1}"
                    found.append((lim, ("bandwidth", f"{res} carries {_fmt(total)} {plural(total, 'chunk')} in {span}; "
                                                     f"its capacity is "
                                                     f"{_fmt(lim.capacity)} ({lim.why})",
                                        ts.transfers[first[k]].place)))
                    break
            continue
        events = sorted([(s, 1, a, i) for s, e, a, i in items] + [(e, 0, -a, i) for s, e, a, i in items])
        level = 0.0
        for time, kind, amount, i in events:
            level += amount
            if kind == 1 and level > lim.capacity + VOLUME_EPS:
                found.append((lim, ("bandwidth", f"{res} carries {_fmt(level)} {lim.measure} at once at {_fmt(time)} "
                                                 f"{ts.unit}; its capacity is {_fmt(lim.capacity)} ({lim.why})",
                                    ts.transfers[i].place)))
                break
    return found


def _busiest(ts: TimedSchedule, valid: list[int]) -> list[dict[str, Any]]:
    load: Counter[tuple[int, int]] = Counter()
    for i in valid:
        for link in ts.transfers[i].links:
            load[link] += 1
    top = sorted(load.items(), key=lambda x: (-x[1], x[0]))[:5]
    return [{"src": s, "dst": d, "chunks": n} for (s, d), n in top]


# --- times ---------------------------------------------------------------------------------------

def _times(ts: TimedSchedule, done: dict[tuple[int, int], Time], out: _Out,
           bound: BoundFn | None) -> dict[str, Any]:
    verified = None
    if done:
        finish = max(done.values())
        verified = Quantity(round(finish * ts.us_per_unit, 6) if ts.us_per_unit else finish,
                            "us" if ts.us_per_unit else ts.unit, ts.model,
                            "" if ts.us_per_unit is None or ts.unit == "us" else f"{_fmt(finish)} {ts.unit}")
    if ts.model_time is not None:
        verified = ts.model_time
    claimed = ts.claimed
    if claimed is not None and claimed.unit == ts.unit and ts.us_per_unit and ts.unit != "us":
        claimed = Quantity(round(claimed.value * ts.us_per_unit, 6), "us", claimed.model,
                           claimed.note or f"{_fmt(claimed.value)} {ts.unit}")
    if claimed is not None and verified is not None and claimed.unit == verified.unit:
        if claimed.value < verified.value * (1 - CLAIM_TOLERANCE):
            out.report("optimistic-claim", f"the file claims {_fmt(claimed.value)} {claimed.unit}, but its transfers "
                                        f"take {_fmt(verified.value)} {verified.unit} in {ts.model}")
        elif claimed.value > verified.value * (1 + CLAIM_TOLERANCE):
            out.report("pessimistic-claim", f"the file claims {_fmt(claimed.value)} {claimed.unit}; its transfers "
                                         f"take {_fmt(verified.value)} {verified.unit} in {ts.model}", None, "info")
    ab = alpha_beta_replay(ts)
    return {"claimed": claimed.to_json() if claimed else None, "verified": verified.to_json() if verified else None,
            "alpha_beta": ab.to_json() if ab else None,
            "bound": bound(ts.topology, ts.collective, ts.chunk_bytes) if bound and ts.chunk_bytes else None}


def _link_timing(topo: Topology, chunk_bytes: float) -> dict[tuple[int, int], tuple[float, float]] | None:
    out = {}
    for lk in topo.links:
        if lk.gbps is None:
            return None
        out[(lk.src, lk.dst)] = (float(lk.alpha_us or 0.0), chunk_bytes / (lk.gbps * 1e3))
    return out


def alpha_beta_replay(ts: TimedSchedule) -> Quantity | None:
    """Our alpha-beta model: transfers in the file's order of start time; each waits until the sender
    holds the chunk and its link and the switch groups it crosses are free, occupies them for
    volume * chunk_bytes / GB/s, and arrives alpha later. None without chunk size or link timing."""
    topo, coll = ts.topology, ts.collective
    if ts.chunk_bytes is None:
        return None
    timing = _link_timing(topo, ts.chunk_bytes)
    if timing is None:
        return None
    group_beta = []
    for grp in topo.switches:
        rate = group_gbps(topo, grp)
        group_beta.append(ts.chunk_bytes / (rate * 1e3) if rate else 0.0)
    ready: dict[tuple[int, int], float] = {}
    for r, c in coll.pre:
        ready[(r, coll.address[c])] = 0.0
    free: dict[Any, float] = defaultdict(float)
    order = sorted(range(len(ts.transfers)), key=lambda i: (ts.transfers[i].start, i))
    for i in order:
        t = ts.transfers[i]
        if any(x not in timing for x in t.links):
            return None
        at0 = ready.get((t.src, t.chunk))
        if at0 is None:
            continue  # not held: reported by the causality check
        at = at0
        for a, b in t.links:
            alpha, beta = timing[(a, b)]
            groups = topo.switches_of(a, b)
            start = max([at, free[(a, b)]] + [free[("g", g)] for g in groups])
            free[(a, b)] = start + beta * t.volume
            for g in groups:
                free[("g", g)] = start + group_beta[g] * t.volume
            at = start + max([beta] + [group_beta[g] for g in groups]) * t.volume + alpha
        key = (t.dst, t.chunk)
        # a copy is there from its first arrival; a reduced value or a split volume from its last part
        last = ts.conserve_volume or coll.is_combining
        ready[key] = max(ready.get(key, 0.0), at) if last else min(ready.get(key, at), at)
    need = _required(ts)
    reached = [ready[k] for k in need if k in ready]
    if not reached:
        return None
    return Quantity(round(max(reached), 6), "us", "alpha-beta",
                    f"chunk {_fmt(ts.chunk_bytes)} B; links and switch groups carry one chunk at a time")

