"""TE-CCL flow JSON (docs/formats.md): the epochs of a time-expanded network, read into a timed schedule.

A file holds kept flows and a claim, but neither the topology nor the chunk size: the topology is the one
the user names (`--topology`), the chunk size follows from the file's own claim, `5-Algo_Bandwidth` =
ranks x chunk / `4-Collective_Finish_Time`. Times are in epochs of `1-Epoch_Duration` seconds.

TE-CCL's model, per directed link with rate C, latency alpha, chunk S and epoch tau: kappa = C tau / S
chunks per epoch, a = ceil(alpha / tau) when alpha / tau > 0.1 (else 0), b = max(0, ceil(1 / kappa) - 1).
- AllGather (MILP, integral, `Chunk c from s traveled over i->j in epoch k [via switches w]`): a chunk sent
  over (i, j) in epoch k can be sent on from epoch k + a + b + 1; a switch forwards (and may copy) in
  exactly that epoch, and a switch -> GPU hop delivers from the switch's send epoch + a. Capacity: at most
  (b + 1) kappa chunks in any b + 1 consecutive epochs; a switch's copies of one chunk count once on the
  link into the switch.
- AlltoAll (LP, `... with volume v in epoch k ...`): volume sent in epoch k arrives at the end of epoch
  k + a and can be sent on from k + a + 1; a switch forwards in exactly k + a + 1 and does not copy; per
  link and epoch the volume is at most kappa. Volumes come from the path map (identical flow strings
  collapse in the flow list).
The claim is `3-Epochs_Required`: the epoch from which the last demand is held.

Node ids are TE-CCL's and include switches (the nodes named after `via switches`). When the file's ids
minus its switches are as many as the topology's ranks, ranks are the non-switch ids in increasing order
(DGX2: 34 ids, switches 0 and 17); when the ids are no more than the ranks, id = rank (NDv2 with two
chassis, where TE-CCL's class wrongly makes GPU 0 a switch). A hop through a switch is one link of our
topology; each of its two legs takes half the link's alpha and its full rate.
"""

from __future__ import annotations

import itertools
import math
import re
from typing import Any

from smtcoll import library
from smtcoll.errors import ModelError
from smtcoll.formats.numbers import finite_float
from smtcoll.formats.source import Source, json_claim
from smtcoll.formats.teccl_machines import TooLargeMachine, machine_for
from smtcoll.limits import max_transfers, transfers_exceeded
from smtcoll.model import Topology
from smtcoll.model.timed import Finding, Limit, Quantity, TimedSchedule, Transfer, Use
from smtcoll.text import count

FORMAT = "teccl-json"
ALPHA_THRESHOLD = 0.1  # TE-CCL's default `alpha_threshold`: smaller alpha / tau is not charged
# ASCII digits only (`\\d` also matches other scripts' digits), at most 9: ids and epochs far beyond any
# machine, and int() stays cheap
_N = r"([0-9]{1,9})"
_FLOW = re.compile(rf"^(?:Chunk {_N} from {_N} traveled over )?{_N}->{_N}(?: with volume ([0-9.eE+-]+))?"
                   rf" in epoch {_N}(?: via switches ([0-9 \->]+))?$")
_DEMAND = re.compile(rf"^Demand at {_N} for chunk {_N} from {_N} met by epoch {_N}$")
MAX_VIA = 16  # switches one hop crosses (TE-CCL's machines cross one)


class TecclError(Exception):
    def __init__(self, where: str, message: str) -> None:
        self.where, self.message = where, message


def is_teccl(data: Any) -> bool:
    return isinstance(data, dict) and "1-Epoch_Duration" in data and any(
        k in data for k in ("7-Flows", "6-Flows", "8-Chunk paths", "7-chunk paths"))


# Seconds, GB/s: TE-CCL's epochs are micro- to milliseconds and its rates GB/s. Outside this range the derived
# quantities (chunk size, chunks per epoch, epochs of latency) leave the floating-point range (1e-320 is
# subnormal, 1e308 x anything overflows), so such a value is refused as what it is: not a TE-CCL quantity.
NUM_RANGE = (1e-12, 1e12)
MAX_EPOCH_RATIO = 1e9  # epochs one chunk or one latency may span (b, a of TE-CCL's model)


def _num(data: dict, key: str, positive: bool = True) -> float:
    v = data.get(key)
    low, high = NUM_RANGE
    if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v) or (positive and v <= 0):
        raise TecclError(key, f"expected a positive number, got {str(v)[:40]}")
    if not low <= abs(v) <= high:
        raise TecclError(key, f"= {v:g}: out of the range {low:g}..{high:g} of a TE-CCL time (s) or rate (GB/s)")
    return float(v)


def _hop(text: Any, where: str) -> tuple[int | None, int | None, int, int, float | None, int, list[int]]:
    if not isinstance(text, str):
        raise TecclError(where, f"expected a flow string, got {text!r}"[:120])
    m = _FLOW.match(text.strip())
    if not m:
        raise TecclError(where, f"not a TE-CCL flow: {text[:100]!r}")
    c, s, i, j, vol, k, via = m.groups()
    parts = re.split(r"\s*->\s*", via.strip()) if via else []
    if len(parts) > MAX_VIA or any(not x.isascii() or not x.isdigit() or len(x) > 9 for x in parts):
        raise TecclError(where, f"via switches: expected at most {MAX_VIA} switch ids, got {via[:60]!r}")
    volume = finite_float(vol) if vol else None
    if vol and (volume is None or volume < 0):
        raise TecclError(where, f"volume: expected a finite number >= 0, got {vol[:30]!r}")
    return (int(c) if c else None, int(s) if s else None, int(i), int(j), volume, int(k), [int(x) for x in parts])


def _ceil(x: float) -> int:
    return math.ceil(x - 1e-6)  # 0.35e-6 / 5e-9 is 70.00000000000001 in floating point


# TE-CCL's input generator (teccl/examples/json_gen.py, `generate_topology_helper`): the epoch is
# `epoch_multiplier` chunk times over the fastest link (`Fast`, epoch_type 1) or the slowest (`Slow`, 2)
# (teccl/solvers/base_formulation.py, `set_epoch_duration`), the multiplier being 4 for Fast runs whose
# output is at most 4 KB, 2 for Slow runs of at most 1 KB, else 1; the chunk is the output over the devices.
MULTIPLIERS = (1, 2, 4)
_KB_GB = 1e-6  # TE-CCL counts in decimal units: 1 KB = 1e-6 GB


def generator_multiplier(kind: str, output_gb: float) -> int:
    """TE-CCL's generator's epoch multiplier for a run over the `fast` or `slow` link of this output size."""
    if kind == "fast":
        return 4 if output_gb <= 4 * _KB_GB * (1 + 1e-9) else 1
    return 2 if output_gb <= _KB_GB * (1 + 1e-9) else 1


def _chunk_gb(data: dict, output_gb: float, ranks: int, topology: Topology, tau: float,
              findings: list[Finding]) -> float:
    """The chunk size in GB: `5-Algo_Bandwidth` x `4-Collective_Finish_Time` (the output) over the GPUs of
    TE-CCL's input, normally the ranks; some inputs named half of them (DGX2 `Fast_Early_Stop`). The file's
    `2-Expected_Epoch_Duration` (the epoch before TE-CCL's alpha adjustment) is m chunk times over the
    fastest or the slowest link, m in 1, 2, 4: the readings (GPUs, link, m) that fit it decide the chunk
    size when they agree; when they do not, the ones that follow TE-CCL's generator do; when these still
    disagree (or none of them fits), the smallest size is taken, the reading under which the links carry
    the most, with a warning naming the others."""
    expected = data.get("2-Expected_Epoch_Duration", tau)
    speeds = [lk.gbps for lk in topology.links if lk.gbps]
    if not isinstance(expected, int | float) or isinstance(expected, bool) or expected <= 0 or not speeds:
        return output_gb / ranks
    fits = []
    for gpus in sorted({ranks, max(1, ranks // 2)}, reverse=True):
        size = output_gb / gpus
        for kind, speed in (("fast", max(speeds)), ("slow", min(speeds))):
            for m in MULTIPLIERS:
                if abs(m * size / speed - expected) <= 1e-6 * expected:
                    fits.append((gpus, kind, m, size))
    if not fits:
        findings.append(Finding("chunk-size", f"the chunk size {output_gb / ranks * 1e9:.6g} B from 5-Algo_Bandwidth "
                                              "does not fit 2-Expected_Epoch_Duration over any link speed", "warning"))
        return output_gb / ranks
    generator = [f for f in fits if f[2] == generator_multiplier(f[1], output_gb)]
    if len({f[3] for f in fits}) > 1 and generator:
        fits = generator
    sizes = sorted({f[3] for f in fits})
    # the reading named: the generator's where it gives this size
    gpus, kind, m, size = next(f for f in [*generator, *fits] if f[3] == sizes[0])
    reading = (f"2-Expected_Epoch_Duration is {count(m, 'chunk time')} over the {kind}est link, "
               f"5-Algo_Bandwidth counts {gpus} GPUs")
    if len(sizes) > 1:
        others = ", ".join(f"{s * 1e9:.6g} B" for s in sizes[1:])
        findings.append(Finding("chunk-size", f"the file's numbers fit more than one chunk size: {size * 1e9:.6g} B "
                                              f"({reading}) and {others}; the smallest is taken (the links carry the "
                                              "most chunks per epoch with it)", "warning"))
    elif gpus != ranks or m != 1:
        findings.append(Finding("chunk-size", f"chunk size {size * 1e9:.6g} B: {reading}", "info"))
    return size


def read_teccl(data: dict, topology: Topology | None, name: str = "") -> TimedSchedule:
    flows_key = "7-Flows" if "7-Flows" in data else "6-Flows"
    paths_key = "8-Chunk paths" if "8-Chunk paths" in data else "7-chunk paths"
    flows = data.get(flows_key, [])
    paths = data.get(paths_key, {})
    if not isinstance(flows, list):
        raise TecclError(flows_key, "expected a list of flow strings")
    hops = len(flows) + sum(len(v) for v in paths.values() if isinstance(v, list)) if isinstance(paths, dict) else 0
    if max(len(flows), hops) > max_transfers():
        raise TecclError(flows_key, transfers_exceeded(max(len(flows), hops)))
    if not isinstance(paths, dict):
        raise TecclError(paths_key, "expected an object: demand -> hops")
    tau = _num(data, "1-Epoch_Duration")
    epochs = data.get("3-Epochs_Required")
    if not isinstance(epochs, int) or isinstance(epochs, bool) or epochs < 0:
        raise TecclError("3-Epochs_Required", f"expected an integer >= 0, got {epochs!r}")
    finish = _num(data, "4-Collective_Finish_Time")
    algbw = _num(data, "5-Algo_Bandwidth")
    parsed = [(_hop(f, f"{flows_key}[{n}]"), f"{flows_key}[{n}]") for n, f in enumerate(flows)]
    lp = any(p[0][4] is not None for p in parsed)
    demands = []
    for key, value in sorted(paths.items()):
        m = _DEMAND.match(str(key))
        if not m:
            raise TecclError(f"{paths_key}.{key}"[:120], "expected 'Demand at d for chunk c from s met by epoch k'")
        demands.append((tuple(int(x) for x in m.groups()), key, value))

    # --- node ids -> ranks
    findings: list[Finding] = []
    ids: set[int] = set()
    switches: set[int] = set()
    for (_c, s, i, j, _, _, via), _ in parsed:
        ids.update((i, j, *via))
        switches.update(via)
        if s is not None:
            ids.add(s)
    for (d, _, s, _), _, _ in demands:
        ids.update((d, s))
    # TE-CCL's bufferless nodes: those it routes `via`, and those that relay but neither send their own
    # chunk nor receive a demand (NDv2 with two chassis: GPU 0, which its class marks as a switch)
    served = {s for (_, s, *_), _ in parsed if s is not None}
    for (d, _, s, _), _, _ in demands:
        served.update((d, s))
    relays = {x for (_, _, i, j, *_), _ in parsed for x in (i, j)}
    bufferless = switches | (relays - served if served else set())
    if topology is None:
        try:
            topology = machine_for(ids, switches, {(i, j) for (_, _, i, j, *_), _ in parsed})
        except TooLargeMachine as e:
            raise TecclError("", str(e)) from None
        if topology is None:
            raise TecclError("", "a TE-CCL file holds no topology and its node ids fit none of TE-CCL's classes "
                                 "(DGX2, NDv2, Mesh): give the machine with --topology (docs/formats.md)")
        findings.append(Finding("topology-inferred", f"the file holds no topology; checked on {topology.name!r}, the "
                                                     "real machine of the TE-CCL class its node ids fit (give "
                                                     "--topology to choose another)", "info"))
    ranks = topology.ranks
    n_ids = max(ids) + 1 if ids else 0
    if switches and n_ids - len(switches) == ranks:
        rank_of = {x: r for r, x in enumerate(sorted(set(range(n_ids)) - switches))}
        switch_nodes = switches
    elif n_ids <= ranks:
        rank_of = {x: x for x in range(ranks)}
        switch_nodes = set()
        for x in sorted(bufferless):
            findings.append(Finding("bufferless-gpu", f"TE-CCL treats node {x} as a bufferless switch, but it is GPU "
                                                      f"{x} of topology {topology.name!r}: it sends and receives no "
                                                      "demands of its own", "warning"))
    else:
        raise TecclError("", f"the file names {n_ids} node ids ({len(switches)} of them switches) but topology "
                             f"{topology.name!r} has {ranks} ranks: not the machine this file was made for")

    chunk_gb = _chunk_gb(data, algbw * finish, ranks, topology, tau, findings)
    chunk_bytes = chunk_gb * 1e9
    if abs(finish - tau * epochs) > 1e-6 * finish:
        findings.append(Finding("inconsistent-claim", f"4-Collective_Finish_Time {finish} s is not 1-Epoch_Duration "
                                                      f"x 3-Epochs_Required = {tau * epochs} s", "warning"))

    def params(u: int, v: int, through: tuple[int, int] | None) -> tuple[int, int, float] | None:
        """(a, b, kappa) of the physical link u -> v; `through` is the rank link of a hop via a switch."""
        if through is not None:
            lk = topology.link(*through)
            half = True
        else:
            ru, rv = rank_of.get(u), rank_of.get(v)
            lk = topology.link(ru, rv) if ru is not None and rv is not None else None
            half = False
        if lk is None or lk.gbps is None:
            return None
        alpha = (lk.alpha_us or 0.0) * 1e-6 / (2 if half else 1)
        kappa = lk.gbps * tau / chunk_gb
        if not (math.isfinite(kappa) and kappa > 0 and 1 / kappa <= MAX_EPOCH_RATIO
                and alpha / tau <= MAX_EPOCH_RATIO):
            raise TecclError("1-Epoch_Duration", f"link {u}->{v}: {kappa:.3g} chunks per epoch and a latency of "
                                                 f"{alpha / tau:.3g} epochs: not an epoch TE-CCL could have used")
        a = _ceil(alpha / tau) if alpha / tau > ALPHA_THRESHOLD else 0
        b = max(0, _ceil(1 / kappa) - 1)
        return a, b, kappa

    limits: dict[str, Limit] = {}
    counted: set[tuple[str, int, tuple[int, int]]] = set()
    transfers: list[Transfer] = []

    def hop(commodity: tuple[int, int], chunk: int, i: int, j: int, k: int, via: list[int], volume: float,
            place: dict[str, Any]) -> None:
        ri, rj = rank_of.get(i), rank_of.get(j)
        if ri is None or rj is None:
            findings.append(Finding("unknown-rank", f"hop {i}->{j} names a switch as its end", "error", place))
            return
        nodes = [i, *via, j]
        through = (ri, rj) if via and all(w in switch_nodes for w in via) else None
        hops = [(ri, rj)] if through else [(rank_of[u], rank_of[v]) for u, v in itertools.pairwise(nodes)]
        uses, epoch = [], k
        end = k
        for _leg, (u, v) in enumerate(itertools.pairwise(nodes)):
            p = params(u, v, through)
            if p is None:  # no such link: `missing-link` is reported by the checker; no timing
                end = epoch
                break
            a, b, kappa = p
            res = f"link {u}->{v}"
            if lp:
                limits.setdefault(res, Limit(res, kappa, "window", 1, f"TE-CCL: {_g(kappa)} chunks per epoch"))
                uses.append(Use(res, epoch, epoch + 1, volume))
                end = epoch + a + 1
            else:
                limits.setdefault(res, Limit(res, (b + 1) * kappa, "window", b + 1,
                                             f"TE-CCL: {_g(kappa)} chunks per epoch, window of "
                                             f"{count(b + 1, 'epoch')}"))
                once = (res, epoch, commodity)
                if once not in counted:  # a switch's copies of one chunk are one flow on its inbound link
                    counted.add(once)
                    uses.append(Use(res, epoch, epoch + 1, 1.0))
                # a switch -> GPU hop delivers alpha after the switch's send (switch_to_gpu_link_on false)
                end = epoch + a if (u in bufferless and v not in bufferless) else epoch + a + b + 1
            epoch = end
        transfers.append(Transfer(chunk, ri, rj, k, end, place, volume, hops, uses))

    if lp:
        coll = library.collective("alltoall", ranks)
        if not demands:
            raise TecclError(paths_key, "an AlltoAll (LP) file needs its path map to account for volumes")
        for (d, _c, s, _), key, value in demands:
            if d not in rank_of or s not in rank_of:
                raise TecclError(f"{paths_key}.{key}", "names a node that is not a rank")
            chunk = rank_of[s] * ranks + rank_of[d]
            if not isinstance(value, list):
                raise TecclError(f"{paths_key}.{key}", "expected a list of paths")
            for pi, path in enumerate(value):
                if not isinstance(path, list):
                    raise TecclError(f"{paths_key}.{key}[{pi}]", "expected a list of [epoch, hop] pairs")
                for hi, pair in enumerate(path):
                    where = f"{paths_key}.{key}[{pi}][{hi}]"
                    text = pair[1] if isinstance(pair, list) and len(pair) == 2 else pair
                    _, _, i, j, vol, k, via = _hop(text, where)
                    hop((s, d), chunk, i, j, k, via, vol if vol is not None else 1.0, {"path": key, "hop": hi})
    else:
        per_gpu = 1 + max((p[0][0] or 0 for p in parsed), default=0)
        coll = library.collective("allgather", ranks, chunks=per_gpu)
        for n, ((c, s, i, j, _, k, via), where) in enumerate(parsed):
            if s is None or c is None:
                raise TecclError(where, "expected 'Chunk c from s traveled over i->j in epoch k'")
            if s not in rank_of:
                raise TecclError(where, f"source {s} is a switch")
            hop((s, c), rank_of[s] * per_gpu + c, i, j, k, via, 1.0, {"flow": n})
    us_per_epoch = tau * 1e6
    model = "TE-CCL epochs (LP)" if lp else "TE-CCL epochs (MILP)"
    claimed = Quantity(float(epochs), "epochs", "TE-CCL 3-Epochs_Required")
    try:
        return TimedSchedule(FORMAT, model, coll, topology, transfers, "epochs", us_per_epoch, list(limits.values()),
                             claimed, round(chunk_bytes, 6), conserve_volume=lp, findings=findings, name=name,
                             volume_group=ranks if lp else 1)
    except ModelError as e:
        raise TecclError(e.where, e.detail) from None


def _g(x: float) -> str:
    return f"{x:.4g}"


# The `Format` protocol (smtcoll.formats.registry).
NAME = "teccl-json"
SUFFIXES: tuple[str, ...] = ()
ERRORS: tuple[type[Exception], ...] = (TecclError,)
_KEYS = ('"1-Epoch_Duration"', '"7-Flows"', '"6-Flows"')


def detect(source: Source) -> bool:
    head = source.head
    return head.startswith("{") and (any(k in head for k in _KEYS) or is_teccl(source.json_or_none()))


_MARKER = re.compile(r'"1-Epoch_Duration"\s*:')


def claims(source: Source) -> bool:
    """TE-CCL flow JSON: a top-level `"1-Epoch_Duration"` (docs/formats.md)."""
    return json_claim(source, lambda d: "1-Epoch_Duration" in d, _MARKER)


def read(source: Source, topology: Topology | None) -> TimedSchedule:
    data = source.json()
    if not is_teccl(data):
        raise TecclError("", "not TE-CCL flow JSON (no 1-Epoch_Duration and flows)")
    return read_teccl(data, topology, source.name)
