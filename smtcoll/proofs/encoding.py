"""A small SMT-LIB2 encoding of "a schedule exists within the budget", written to be reviewed.

It is independent of `smtcoll.synth` and mirrors the checker (`smtcoll.check.schedule`) rule by rule,
for NON-COMBINING collectives only (every chunk its own address; combining collectives are refused,
their claims need a bound witness). UNSAT of the formula proves the claim "no schedule with at most S
steps and at most R rounds exists".

Variables (all Boolean):
- `h_<r>_<a>_<t>`: rank r holds address a after step t (t = 0 is the start);
- `x_<t>_<a>_<s>_<d>`: in step t (1..S) rank s sends address a to rank d, over an existing link only;
- `k_<t>_<j>`: step t has at least j rounds (j = 1..R), when the claim bounds the rounds.

A step may have 0 rounds (then it can send nothing): so a schedule with fewer steps fits the horizon
of S steps. Without a round budget, rounds are unbounded and the capacity families are left out: any
load fits in enough rounds. Duplicate identical sends only add load, so one Boolean per send loses
no schedule. Output is deterministic: the same input gives the same bytes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import attrs

from smtcoll.errors import ModelError
from smtcoll.model import Collective, Schedule, Send, Step, Topology
from smtcoll.proofs.claim import Claim

ENCODER = "smtcoll.proofs.encoding/1"


def _sum(terms: list[str]) -> str:
    if not terms:
        return "0"
    return terms[0] if len(terms) == 1 else f"(+ {' '.join(terms)})"


def _or(terms: list[str]) -> str:
    if not terms:
        return "false"
    return terms[0] if len(terms) == 1 else f"(or {' '.join(terms)})"


@attrs.frozen
class Encoding:
    """The formula and the names of its variables, to decode models and encode schedules."""

    topology: Topology
    collective: Collective
    claim: Claim
    text: str

    @property
    def horizon(self) -> int:
        return self.claim.step_horizon

    def holds(self, r: int, a: int, t: int) -> str:
        return f"h_{r}_{a}_{t}"

    def send(self, t: int, a: int, s: int, d: int) -> str:
        return f"x_{t}_{a}_{s}_{d}"

    def round_var(self, t: int, j: int) -> str:
        return f"k_{t}_{j}"

    def decode(self, value: dict[str, bool]) -> Schedule:
        """A model (variable name -> truth value) as a Schedule: empty steps are dropped; without a
        round budget a step gets the fewest rounds its load needs."""
        topo, coll = self.topology, self.collective
        steps = []
        for t in range(1, self.horizon + 1):
            sends = [Send(a, l.src, l.dst) for a in coll.addresses for l in topo.links
                     if value.get(self.send(t, a, l.src, l.dst), False)]
            if not sends:
                continue
            if self.claim.rounds is not None:
                rounds = sum(value.get(self.round_var(t, j), False) for j in range(1, self.claim.rounds + 1))
            else:
                rounds = _rounds_needed(topo, sends)
            steps.append(Step(max(1, rounds), sorted(sends)))
        return Schedule(topo, coll, steps, "decoded")

    def assignment(self, schedule: Schedule) -> dict[str, bool]:
        """The variable values a schedule induces (it must fit the horizon and name only existing
        links and addresses): the converse of `decode`, used to test that every checked schedule
        satisfies the formula."""
        topo, coll = self.topology, self.collective
        if len(schedule.steps) > self.horizon:
            raise ModelError("schedule", f"has {len(schedule.steps)} steps, more than the horizon {self.horizon}")
        value: dict[str, bool] = {}
        held = {(r, coll.address[c]) for r, c in coll.pre}
        for r in range(coll.ranks):
            for a in coll.addresses:
                value[self.holds(r, a, 0)] = (r, a) in held
        for t in range(1, self.horizon + 1):
            step = schedule.steps[t - 1] if t <= len(schedule.steps) else Step(0 if self.claim.rounds else 1, ())
            sent = {(s.chunk, s.src, s.dst) for s in step.sends}
            for a in coll.addresses:
                for l in topo.links:
                    value[self.send(t, a, l.src, l.dst)] = (a, l.src, l.dst) in sent
            if self.claim.rounds is not None:
                for j in range(1, self.claim.rounds + 1):
                    value[self.round_var(t, j)] = j <= step.rounds
            held = held | {(d, a) for a, s, d in sent if (s, a) in held}
            for r in range(coll.ranks):
                for a in coll.addresses:
                    value[self.holds(r, a, t)] = (r, a) in held
        return value


def _rounds_needed(topo: Topology, sends: Iterable[Send]) -> int:
    load = Counter((s.src, s.dst) for s in sends)
    need = [-(-n // topo.bandwidth(src, dst)) for (src, dst), n in load.items()]
    for g in topo.switches:
        n = sum(k for (src, dst), k in load.items() if src in g.srcs and dst in g.dsts)
        need.append(-(-n // g.bandwidth))
    return max(need, default=1)


def encode(topo: Topology, coll: Collective, claim: Claim, header: Iterable[str] = ()) -> Encoding:
    """The SMT-LIB2 formula, satisfiable exactly when a schedule within the claim's budget exists."""
    if topo.ranks != coll.ranks:
        raise ModelError("collective", f"has {coll.ranks} ranks but the topology has {topo.ranks}")
    if coll.is_combining:
        raise ModelError("collective", f"{coll.name} is combining: the SMT certificate encoding covers "
                                       "non-combining collectives only (use a bound witness)")
    enc = Encoding(topo, coll, claim, "")
    S, R = claim.step_horizon, claim.rounds
    addrs = coll.addresses
    links = list(topo.links)
    out: list[str] = [f"; {line}" for line in header]
    out += [f"; encoder {ENCODER}: sat = a schedule exists within the budget; unsat proves the claim",
            f"; {claim.text(topo, coll)}", "(set-logic QF_LIA)"]

    def family(comment: str) -> None:
        out.append("")
        out.append(f"; --- {comment}")

    family("variables: h = holds after step t, x = send in step t over a link, k = step t has >= j rounds")
    for t in range(S + 1):
        for r in range(coll.ranks):
            for a in addrs:
                out.append(f"(declare-const {enc.holds(r, a, t)} Bool)")
    for t in range(1, S + 1):
        for a in addrs:
            for l in links:
                out.append(f"(declare-const {enc.send(t, a, l.src, l.dst)} Bool)")
        for j in range(1, (R or 0) + 1):
            out.append(f"(declare-const {enc.round_var(t, j)} Bool)")

    family("precondition: at the start a rank holds exactly the addresses of its chunks in pre")
    start = {(r, coll.address[c]) for r, c in coll.pre}
    for r in range(coll.ranks):
        for a in addrs:
            v = enc.holds(r, a, 0)
            out.append(f"(assert {v})" if (r, a) in start else f"(assert (not {v}))")

    family("causality: a send moves what the sender held when the step began")
    for t in range(1, S + 1):
        for a in addrs:
            for l in links:
                out.append(f"(assert (=> {enc.send(t, a, l.src, l.dst)} {enc.holds(l.src, a, t - 1)}))")

    family("holding: after step t a rank holds what it held before or received in step t, nothing else")
    for t in range(1, S + 1):
        for r in range(coll.ranks):
            for a in addrs:
                got = [enc.send(t, a, l.src, r) for l in links if l.dst == r]
                out.append(f"(assert (= {enc.holds(r, a, t)} {_or([enc.holds(r, a, t - 1), *got])}))")

    if R is not None:
        family("rounds: k_t_j means step t has at least j rounds (unary, so k_t_j implies k_t_(j-1))")
        for t in range(1, S + 1):
            for j in range(2, R + 1):
                out.append(f"(assert (=> {enc.round_var(t, j)} {enc.round_var(t, j - 1)}))")

        def rounds_times(t: int, bw: int) -> str:
            return _sum([f"(ite {enc.round_var(t, j)} {bw} 0)" for j in range(1, R + 1)])

        family(f"round budget: at most {R} rounds over all steps")
        out.append(f"(assert (<= {_sum([f'(ite {enc.round_var(t, j)} 1 0)' for t in range(1, S + 1) for j in range(1, R + 1)])} {R}))")

        family("link bandwidth: a link carries at most bandwidth * rounds chunks in a step")
        for t in range(1, S + 1):
            for l in links:
                load = _sum([f"(ite {enc.send(t, a, l.src, l.dst)} 1 0)" for a in addrs])
                out.append(f"(assert (<= {load} {rounds_times(t, l.bandwidth)}))")

        family("switch groups: at most bandwidth * rounds chunks from srcs to dsts in a step")
        for t in range(1, S + 1):
            for g in topo.switches:
                members = [l for l in links if l.src in g.srcs and l.dst in g.dsts]
                if not members:
                    continue
                load = _sum([f"(ite {enc.send(t, a, l.src, l.dst)} 1 0)" for l in members for a in addrs])
                out.append(f"(assert (<= {load} {rounds_times(t, g.bandwidth)}))")

    family(f"postcondition: after step {S} every rank holds every address of its chunks in post")
    for r, c in coll.post:
        out.append(f"(assert {enc.holds(r, coll.address[c], S)})")

    out += ["", "(check-sat)", ""]
    return attrs.evolve(enc, text="\n".join(out))
