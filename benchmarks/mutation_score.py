"""Mutation score of the MSCCL program checker: how many wrong programs does `smtcoll verify` catch?

For every correct corpus file (label `ok`, a collective with a known postcondition) the script applies
single semantic mutations to the XML (drop a step, drop a dependency, clear a `hasdep`, change a peer, a
channel, an offset, a `cnt`, a step type, a buffer; swap two adjacent steps), runs the checker in process
and counts the mutants it flags (verdict `error` or `unusable`).

A mutant the checker passes (a *survivor*) is either equivalent (the mutated program still implements the
collective, race and deadlock free) or a checker bug. To tell them apart every survivor is run by an
independent brute-force interpreter written here from docs/msccl-xml.md, sharing no code with
`smtcoll.check`: it parses the XML with `xml.etree`, executes the thread blocks with concrete values
(multisets of input contributions, so a reduction counted twice is visible), one chunk per action, with
bounded FIFOs of whole-step messages, under many random interleavings (uniformly random, and random
priorities, which push one thread block as far as it goes before the others, the schedules that expose
races), and compares the final output buffers with the collective's postcondition. A survivor is
*equivalent* when every run completes with the right output in every declared mode.

    python benchmarks/mutation_score.py [--per-operator 6] [--runs 40] [--max-steps 2500] [--seed 1]
"""

from __future__ import annotations

import argparse
import collections
import copy
import csv
import random
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from smtcoll.check.program import check_program  # noqa: E402
from smtcoll.msccl.reader import read_program_bytes  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus" / "msccl-xml"
KNOWN = {"allgather", "allreduce", "alltoall", "reducescatter", "reduce_scatter"}
TYPES = ("s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy", "re")
READS = {"s", "rrs", "rrc", "rrcs", "cpy", "re"}
WRITES = {"r", "rcs", "rrc", "rrcs", "cpy", "re"}
SENDS = {"s", "rcs", "rrs", "rrcs"}
RECVS = {"r", "rcs", "rrs", "rrc", "rrcs"}
CAPACITY = {"Simple": 2, "LL": 8, "LL128": 8}


# ---------------------------------------------------------------------------------------------------
# the independent interpreter
class Invalid(Exception):
    """The runtimes refuse the program, or a run of it goes wrong (deadlock, bad access, mismatch)."""


def _i(e: ET.Element, k: str) -> int:
    return int(e.get(k, ""), 0)


CHECK_SRC = {"s", "rrs", "rrcs", "cpy", "re"}  # offsets the runtimes' parsers check against the declared sizes
CHECK_DST = {"r", "rcs", "rrcs", "cpy", "re"}


def _transmissions(tb: ET.Element, declared: dict[str, int]) -> list[dict]:
    """The runtime's view of a thread block: nops give their dependency to the next transfer, runs of `re`
    on one destination are fused, and the step counter is numbered like the interpreter's."""
    out: list[dict] = []
    pending: list[tuple[int, int]] = []
    fusable = False
    counter = 0
    reductions = 0
    for st in tb.findall("step"):
        kind = st.get("type")
        depid, deps = _i(st, "depid"), _i(st, "deps")
        if kind == "nop":
            if depid >= 0:  # waits for the next transfer that is not a fused continuation
                pending.append((depid, deps))
            continue  # a nop does not end a run of fused reductions (msccl_parser.cc)
        if kind not in TYPES:
            raise Invalid(f"unknown step type {kind}")
        cnt = _i(st, "cnt")
        if not 0 <= cnt < 72:
            raise Invalid("cnt out of range")
        for used, buf, off in ((CHECK_SRC, st.get("srcbuf"), _i(st, "srcoff")),
                               (CHECK_DST, st.get("dstbuf"), _i(st, "dstoff"))):
            if kind in used and not -1 <= off < declared.get(buf or "", 0):
                raise Invalid(f"offset {off} outside the declared {buf} buffer")
        prev = out[-1] if out else None
        if (kind == "re" and fusable and prev and prev["type"] == "re" and depid == -1
                and (prev["dstbuf"], prev["dstoff"], prev["srcbuf"]) == (st.get("dstbuf"), _i(st, "dstoff"),
                                                                         st.get("srcbuf"))):
            prev["srcoffs"].append(_i(st, "srcoff"))
            prev["cnt"] = cnt
            prev["hasdep"] = _i(st, "hasdep") == 1
            counter += 1
            prev["counter"] = counter - 1  # a fused reduction advances the counter by one more
            reductions += 1
            fusable = not prev["hasdep"] and reductions < 16
            continue
        if pending and depid < 0:
            raise Invalid("nop chain not ended by a step with a depid")
        waits = pending + ([(depid, deps)] if depid >= 0 else [])
        pending = []
        counter += max(len(waits) - 1, 0)
        t = dict(type=kind, srcbuf=st.get("srcbuf"), srcoffs=[_i(st, "srcoff")], dstbuf=st.get("dstbuf"),
                 dstoff=_i(st, "dstoff"), cnt=cnt, waits=waits, hasdep=_i(st, "hasdep") == 1, counter=counter)
        counter += 1
        out.append(t)
        if kind == "re":
            reductions += 1
            fusable = not t["hasdep"] and reductions < 16
        else:
            fusable = False
    return out


class Interpreter:
    def __init__(self, root: ET.Element) -> None:
        a = root
        self.coll = a.get("coll")
        self.n, self.C, self.nch = _i(a, "ngpus"), _i(a, "nchunksperloop"), _i(a, "nchannels")
        self.cap = CAPACITY.get(a.get("proto", ""), 2)
        self.cf = self.C // self.n
        inplace = _i(a, "inplace") == 1
        outofplace = _i(a, "outofplace") == 1 if a.get("outofplace") is not None else not inplace
        self.modes = [m for m, on in ((True, inplace), (False, outofplace)) if on]
        self.tbs: list[tuple[int, int, int, int, int, list[dict]]] = []
        self.scratch: dict[int, int] = {}
        for g in a.findall("gpu"):
            r = _i(g, "id")
            if not 0 <= r < self.n or r in self.scratch:
                raise Invalid("bad gpu id")
            self.scratch[r] = _i(g, "s_chunks")
            ids = []
            for tb in g.findall("tb"):
                tid, send, recv, chan = _i(tb, "id"), _i(tb, "send"), _i(tb, "recv"), _i(tb, "chan")
                for peer in (send, recv):
                    if peer == r or not -1 <= peer < self.n:
                        raise Invalid("bad peer")
                if not 0 <= chan < 32:
                    raise Invalid("bad channel")
                trans = _transmissions(tb, {"i": _i(g, "i_chunks"), "o": _i(g, "o_chunks"),
                                            "s": _i(g, "s_chunks")})
                if any(t["type"] in SENDS for t in trans) and send < 0:
                    raise Invalid("send without a send peer")
                if any(t["type"] in RECVS for t in trans) and recv < 0:
                    raise Invalid("receive without a receive peer")
                ids.append(tid)
                self.tbs.append((r, tid, send, recv, chan, trans))
            if sorted(ids) != list(range(len(ids))):
                raise Invalid("thread block ids are not 0..n-1")

    # buffers ------------------------------------------------------------------------------------
    def size(self, rank: int, buf: str) -> int:
        if buf == "i":
            return self.cf if self.coll == "allgather" else self.C
        if buf == "o":
            return self.cf if self.coll in ("reducescatter", "reduce_scatter") else self.C
        if buf == "s":
            return self.scratch.get(rank, 0)
        raise Invalid(f"unknown buffer {buf}")

    def key(self, rank: int, buf: str, k: int, in_place: bool) -> tuple[int, str, int]:
        if not 0 <= k < self.size(rank, buf):
            raise Invalid(f"{buf}[{k}] outside the buffer on rank {rank}")
        if in_place:
            if buf == "i" and self.coll == "allgather":
                return rank, "o", rank * self.cf + k
            if buf == "i" and self.coll not in ("reducescatter", "reduce_scatter"):
                return rank, "o", k
            if buf == "o" and self.coll in ("reducescatter", "reduce_scatter"):
                return rank, "i", rank * self.cf + k
        return rank, buf, k

    def expected(self) -> dict[tuple[int, int], tuple]:
        n, cf, C = self.n, self.cf, self.C
        out = {}
        for q in range(n):
            for k in range(self.size(q, "o")):
                if self.coll == "allgather":
                    v = ((0, k // cf, k % cf),)
                elif self.coll == "allreduce":
                    v = tuple((0, r, k) for r in range(n))
                elif self.coll == "alltoall":
                    v = ((0, k // cf, q * cf + k % cf),)
                else:
                    v = tuple((0, r, q * cf + k) for r in range(n))
                out[(q, k)] = v
        assert C
        return out

    # one run ------------------------------------------------------------------------------------
    def run(self, in_place: bool, rng: random.Random, priorities: bool) -> dict[tuple[int, int], tuple]:
        mem: dict[tuple[int, str, int], tuple] = {}
        for r in range(self.n):
            for k in range(self.size(r, "i")):
                mem[self.key(r, "i", k, in_place)] = ((0, r, k),)

        def read(rank: int, buf: str, k: int) -> tuple:
            key = self.key(rank, buf, k, in_place)
            return mem.get(key, ((1, key[0], "ios".index(key[1]), key[2]),))  # undefined: unlike any input

        def write(rank: int, buf: str, k: int, v: tuple) -> None:
            mem[self.key(rank, buf, k, in_place)] = v

        tbs = self.tbs
        exists = {(r, tid) for r, tid, *_ in tbs}
        flags: dict[tuple[int, int], int] = {}
        fifo: dict[tuple[int, int, int], collections.deque] = collections.defaultdict(collections.deque)
        in_flight: dict[tuple[int, int, int], int] = collections.defaultdict(int)
        pc = [0] * len(tbs)
        piece = [0] * len(tbs)
        started = [False] * len(tbs)
        prio = [rng.random() for _ in tbs]

        def conn_out(i: int):
            r, _, send, _, chan, _ = tbs[i]
            return (r, send, chan) if send >= 0 and chan < self.nch else None

        def conn_in(i: int):
            r, _, _, recv, chan, _ = tbs[i]
            return (recv, r, chan) if recv >= 0 and chan < self.nch else None

        def enabled(i: int) -> bool:
            r, tid, _, _, _, trans = tbs[i]
            if pc[i] >= len(trans):
                return False
            t = trans[pc[i]]
            if not started[i]:
                return all((r, d) in exists and flags.get((r, d), -1) >= s for d, s in t["waits"])
            if piece[i] >= t["cnt"]:
                return True
            if t["type"] in RECVS:
                c = conn_in(i)
                if c is None or not fifo[c]:
                    return False
            if t["type"] in SENDS:
                c = conn_out(i)
                if c is None or (piece[i] == 0 and in_flight[c] >= self.cap):
                    return False
            return True

        def step(i: int) -> None:
            r, tid, _, _, _, trans = tbs[i]
            t = trans[pc[i]]
            if not started[i]:
                started[i] = True
                return
            if piece[i] < t["cnt"]:
                k = piece[i]
                kind = t["type"]
                incoming = None
                if kind in RECVS:
                    c = conn_in(i)
                    mcnt, last, incoming = fifo[c].popleft()
                    if mcnt != t["cnt"]:
                        raise Invalid("a message received with another cnt than it was sent with")
                    if last:
                        in_flight[c] -= 1
                if kind == "s":
                    value = read(r, t["srcbuf"], t["srcoffs"][0] + k)
                elif kind in ("r", "rcs"):
                    value = incoming
                    write(r, t["dstbuf"], t["dstoff"] + k, value)
                elif kind == "cpy":
                    write(r, t["dstbuf"], t["dstoff"] + k, read(r, t["srcbuf"], t["srcoffs"][0] + k))
                    value = None
                elif kind == "re":
                    value = read(r, t["dstbuf"], t["dstoff"] + k)
                    for off in t["srcoffs"]:
                        value = tuple(sorted(value + read(r, t["srcbuf"], off + k)))
                    write(r, t["dstbuf"], t["dstoff"] + k, value)
                else:  # rrs, rrc, rrcs
                    value = tuple(sorted(incoming + read(r, t["srcbuf"], t["srcoffs"][0] + k)))
                    if kind != "rrs":
                        write(r, t["dstbuf"], t["dstoff"] + k, value)
                if kind in SENDS:
                    c = conn_out(i)
                    if k == 0:
                        in_flight[c] += 1
                    fifo[c].append((t["cnt"], k == t["cnt"] - 1, value))
                piece[i] += 1
                if piece[i] < t["cnt"]:
                    return
            if t["hasdep"]:
                flags[(r, tid)] = t["counter"]
            pc[i] += 1
            piece[i] = 0
            started[i] = False

        while True:
            ready = [i for i in range(len(tbs)) if enabled(i)]
            if not ready:
                break
            i = max(ready, key=prio.__getitem__) if priorities else rng.choice(ready)
            step(i)
            if priorities and rng.random() < 0.02:  # a priority change point (PCT-like)
                prio[i] = rng.random()
        if any(pc[i] < len(tbs[i][5]) for i in range(len(tbs))):
            raise Invalid("deadlock")
        if any(fifo.values()):
            raise Invalid("messages left in a FIFO")
        return {(q, k): read(q, "o", k) for q in range(self.n) for k in range(self.size(q, "o"))}

    def equivalent(self, runs: int, seed: int) -> str:
        """'' when every run of every mode ends with the postcondition, else what went wrong."""
        want = self.expected()
        for in_place in self.modes:
            for j in range(runs):
                rng = random.Random(seed * 1000 + j)
                try:
                    got = self.run(in_place, rng, priorities=j % 2 == 1)
                except Invalid as e:
                    return f"{'in' if in_place else 'out-of'}-place run {j}: {e}"
                if got != want:
                    bad = next(k for k in want if got.get(k) != want[k])
                    return (f"{'in' if in_place else 'out-of'}-place run {j}: o[{bad[1]}] on rank {bad[0]} is "
                            f"{got.get(bad)}, expected {want[bad]}")
        return ""


def interpret(text: bytes, runs: int, seed: int) -> str:
    try:
        return Interpreter(ET.fromstring(text)).equivalent(runs, seed)
    except Invalid as e:
        return f"refused: {e}"
    except (ValueError, KeyError, TypeError) as e:
        return f"refused: {type(e).__name__} {e}"


# ---------------------------------------------------------------------------------------------------
# mutations
def _renumber(tb: ET.Element) -> None:
    for k, st in enumerate(tb.findall("step")):
        st.set("s", str(k))


def survivor_class(op: str, root: ET.Element, site: tuple) -> str:
    """Why a mutant may be equivalent, from the original program (the interpreter decides whether it is)."""
    g, tb = site[0], site[1]
    steps = tb.findall("step")
    if op == "change-cnt":
        st, nxt = steps[site[2]], steps[site[2] + 1] if site[2] + 1 < len(steps) else None
        if (st.get("type") == "re" and nxt is not None and nxt.get("type") == "re" and st.get("hasdep") == "0"
                and nxt.get("depid") == "-1" and (st.get("dstbuf"), st.get("dstoff"), st.get("srcbuf"))
                == (nxt.get("dstbuf"), nxt.get("dstoff"), nxt.get("srcbuf"))):
            return "cnt of a fused reduction that is not the last one (the runtime keeps the last step's cnt)"
        return "cnt of a step whose extra or missing chunk is not used"
    if op == "change-channel":
        if tb.get("send") == "-1" and tb.get("recv") == "-1":
            return "channel of a thread block without peers (it opens no connection)"
        return "channel of a thread block with peers"
    if op == "change-buffer":
        in_place_only = root.get("inplace") == "1" and root.get("outofplace", "0") == "0"
        if in_place_only and root.get("coll") in ("allreduce", "alltoall") and \
                {steps[site[2]].get(site[4]), "i", "o"} == {"i", "o"}:
            return "i <-> o in an in-place-only program, where i and o alias"
        return "other buffer"
    if op == "clear-hasdep":
        me, k = tb.get("id"), site[2]
        waiters = [s for t in g.findall("tb") for s in t.findall("step") if s.get("depid") == me]
        if not waiters:
            return "flag that no step waits for"
        if any(s.get("hasdep") == "1" for s in steps[k + 1:]):
            return "the waiter is released by a later flagged step of the same thread block"
        return "flag whose waiters are satisfied otherwise"
    if op in ("drop-dependency", "drop-step") and (op == "drop-dependency" or steps[site[2]].get("type") == "nop"):
        return "redundant dependency (the order follows from program order, messages or other dependencies)"
    if op == "swap-steps":
        return "adjacent steps that are independent (distinct chunks and FIFOs, or reads only)"
    return "other"


def mutants(root: ET.Element, rng: random.Random, per_operator: int) -> list[tuple[str, str, ET.Element, str]]:
    """(operator, description, mutated tree) for up to `per_operator` random sites per operator."""
    n, nch = _i(root, "ngpus"), _i(root, "nchannels")
    tbs = [(g, tb) for g in root.findall("gpu") for tb in g.findall("tb")]
    steps = [(g, tb, k, st) for g, tb in tbs for k, st in enumerate(tb.findall("step"))]
    real = [x for x in steps if x[3].get("type") != "nop"]
    sites: dict[str, list] = {
        "drop-step": steps,
        "drop-dependency": [x for x in steps if _i(x[3], "depid") >= 0],
        "clear-hasdep": [x for x in steps if x[3].get("hasdep") == "1"],
        "change-peer": [(g, tb, f) for g, tb in tbs for f in ("send", "recv") if _i(tb, f) >= 0],
        "change-channel": tbs,
        "change-offset": [(g, tb, k, st, f) for g, tb, k, st in real for f, used in
                          (("srcoff", READS), ("dstoff", WRITES)) if st.get("type") in used],
        "change-cnt": real,
        "change-type": real,
        "change-buffer": [(g, tb, k, st, f) for g, tb, k, st in real for f, used in
                          (("srcbuf", READS), ("dstbuf", WRITES)) if st.get("type") in used],
        "swap-steps": [(g, tb, k) for g, tb in tbs for k in range(len(tb.findall("step")) - 1)],
    }
    out = []
    for op, candidates in sites.items():
        chosen = rng.sample(candidates, min(per_operator, len(candidates)))
        for site in chosen:
            tree = copy.deepcopy(root)
            # find the same elements in the copy by position
            gi = list(root.findall("gpu")).index(site[0])
            g2 = tree.findall("gpu")[gi]
            ti = list(site[0].findall("tb")).index(site[1])
            tb2 = g2.findall("tb")[ti]
            st2 = None
            if len(site) > 2 and isinstance(site[2], int) and op != "swap-steps":
                st2 = tb2.findall("step")[site[2]]
            where = f"gpu {site[0].get('id')} tb {site[1].get('id')}"
            if op == "drop-step":
                tb2.remove(st2)
                _renumber(tb2)
                desc = f"{where} step {site[2]} ({st2.get('type')}) removed"
            elif op == "drop-dependency":
                st2.set("depid", "-1")
                st2.set("deps", "-1")
                desc = f"{where} step {site[2]}: depid/deps cleared"
            elif op == "clear-hasdep":
                st2.set("hasdep", "0")
                desc = f"{where} step {site[2]}: hasdep=0"
            elif op == "change-peer":
                f = site[2]
                choices = [p for p in range(n) if p not in (_i(tb2, f), _i(g2, "id"))]
                if not choices:
                    continue
                new = rng.choice(choices)
                tb2.set(f, str(new))
                desc = f"{where}: {f}={new}"
            elif op == "change-channel":
                old = _i(tb2, "chan")
                choices = [c for c in range(max(nch, old + 2)) if c != old]
                new = rng.choice(choices)
                tb2.set("chan", str(new))
                desc = f"{where}: chan {old} -> {new}"
            elif op == "change-offset":
                f = site[4]
                new = _i(st2, f) + rng.choice((-1, 1))
                st2.set(f, str(new))
                desc = f"{where} step {site[2]}: {f}={new}"
            elif op == "change-cnt":
                new = max(0, _i(st2, "cnt") + rng.choice((-1, 1)))
                if new == _i(st2, "cnt"):
                    new += 1
                st2.set("cnt", str(new))
                desc = f"{where} step {site[2]}: cnt={new}"
            elif op == "change-type":
                new = rng.choice([t for t in TYPES if t != st2.get("type")])
                desc = f"{where} step {site[2]}: type {st2.get('type')} -> {new}"
                st2.set("type", new)
            elif op == "change-buffer":
                f = site[4]
                new = rng.choice([b for b in "ios" if b != st2.get(f)])
                st2.set(f, new)
                desc = f"{where} step {site[2]}: {f}={new}"
            else:  # swap-steps
                k = site[2]
                elems = tb2.findall("step")
                a, b = elems[k], elems[k + 1]
                ia, ib = list(tb2).index(a), list(tb2).index(b)
                tb2[ia], tb2[ib] = b, a
                _renumber(tb2)
                desc = f"{where}: steps {k} and {k + 1} swapped"
            out.append((op, desc, tree, survivor_class(op, root, site)))
    return out


def checker_flags(text: bytes, name: str) -> tuple[bool, str]:
    try:
        report = check_program(read_program_bytes(text, name), name)
    except Exception as e:  # the checker must never raise; count it as a bug
        return False, f"CHECKER RAISED {type(e).__name__}: {e}"
    errors = sorted({v.code for v in report.violations if v.severity == "error"})
    return report.verdict != "ok", ",".join(errors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-operator", type=int, default=6, help="mutation sites per operator and file")
    parser.add_argument("--runs", type=int, default=40, help="interpreter runs per mode for each survivor")
    parser.add_argument("--max-steps", type=int, default=2500, help="skip larger files (interpreter cost)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--files", nargs="*", help="only these corpus files (relative paths)")
    parser.add_argument("--cross-check", action="store_true",
                        help="also interpret the flagged mutants and count those found equivalent (false alarms)")
    opts = parser.parse_args()
    rows = list(csv.DictReader((opts.corpus / "labels.tsv").open(), delimiter="\t"))
    start = time.perf_counter()
    totals: collections.Counter = collections.Counter()
    flagged_by_op: collections.Counter = collections.Counter()
    total_by_op: collections.Counter = collections.Counter()
    survivors: list[tuple[str, str, str, str]] = []
    skipped = []
    files = 0
    for row in rows:
        if row["expected"] != "ok" or (opts.files and row["file"] not in opts.files):
            continue
        path = opts.corpus / row["file"]
        root = ET.parse(path).getroot()
        nsteps = len(root.findall("gpu/tb/step"))
        if root.get("coll") not in KNOWN or nsteps > opts.max_steps:
            skipped.append(f"{row['file']} ({root.get('coll')}, {nsteps} steps)")
            continue
        original = path.read_bytes()
        sanity = interpret(original, 4, opts.seed)
        if sanity:
            print(f"INTERPRETER DISAGREES on the original {row['file']}: {sanity}", flush=True)
            skipped.append(f"{row['file']} (interpreter: {sanity})")
            continue
        files += 1
        rng = random.Random(f"{opts.seed}:{row['file']}")
        for op, desc, tree, why in mutants(root, rng, opts.per_operator):
            text = ET.tostring(tree)
            flagged, codes = checker_flags(text, row["file"])
            total_by_op[op] += 1
            if flagged:
                flagged_by_op[op] += 1
                if opts.cross_check and not interpret(text, max(opts.runs // 4, 2), opts.seed):
                    totals["flagged equivalent"] += 1
                    print(f"flagged but equivalent {row['file']}: {op}: {desc}: {codes}", flush=True)
                continue
            verdict = interpret(text, opts.runs, opts.seed)
            kind = "equivalent" if not verdict else "NOT EQUIVALENT"
            totals[kind] += 1
            survivors.append((row["file"], op, why, verdict or "equivalent"))
            print(f"survivor [{kind}] {row['file']}: {op}: {desc}{': ' + verdict if verdict else ''}", flush=True)
    total = sum(total_by_op.values())
    flagged = sum(flagged_by_op.values())
    equivalent = totals["equivalent"]
    missed = totals["NOT EQUIVALENT"]
    print(f"\nfiles mutated: {files}; skipped: {len(skipped)}")
    for s in skipped:
        print(f"  skipped {s}")
    print(f"{'operator':<16} {'mutants':>8} {'flagged':>8}")
    for op in total_by_op:
        print(f"{op:<16} {total_by_op[op]:>8} {flagged_by_op[op]:>8}")
    print(f"total mutants {total}, flagged {flagged} ({100 * flagged / max(total, 1):.1f}%), survivors "
          f"{total - flagged}: {equivalent} shown equivalent, {missed} not equivalent (checker misses)")
    print(f"mutation score (flagged / non-equivalent): {100 * flagged / max(total - equivalent, 1):.2f}%")
    print("survivors by class (operator, why it may be equivalent, interpreter verdict):")
    classes = collections.Counter((op, why, "equivalent" if v == "equivalent" else "NOT EQUIVALENT")
                                  for _, op, why, v in survivors)
    for (op, why, v), n in sorted(classes.items()):
        print(f"  {n:>4}  {op}: {why} [{v}]")
    if opts.cross_check:
        print(f"flagged mutants the interpreter finds equivalent (false alarms or stricter rules): "
              f"{totals['flagged equivalent']}")
    print(f"time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
