"""Differential test against the runtimes' own parsers (../shared/corpus/runtime-parse): for every file,
runtime and rank, smtcoll accepts exactly when the runtime's parser accepts, and for an accepted rank it
builds the same program (thread blocks, peers, channels, transmissions after nop removal and reduction
fusion, reduction sources, dependencies). Entries where the runtime wrote past a fixed array must be
reported by smtcoll as errors instead (the kernel would read garbage)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import paths
from helpers.paths import corpus_params

from smtcoll.check.acceptance import accepted_ranks
from smtcoll.check.parse_rules import is_complete, parse_rule_findings
from smtcoll.check.transmissions import lower
from smtcoll.errors import InputError
from smtcoll.msccl.reader import read_program

SHARED = paths.SHARED
ORACLE = SHARED / "corpus" / "runtime-parse"


def _cases() -> list[tuple[Path, Path]]:
    if not ORACLE.is_dir():
        return []
    out = []
    for j in sorted((ORACLE / "expected").rglob("*.json")):
        rel = j.relative_to(ORACLE / "expected")
        suffix = ".executor.json" if str(rel).endswith(".executor.json") else ".legacy.json"
        name = str(rel)[: -len(suffix)]
        top, rest = name.split("/", 1)
        xml = ORACLE / rest if top == "probes" else SHARED / "corpus" / "msccl-xml" / rest
        if top == "probes":
            xml = ORACLE / "probes" / rest
        out.append((xml, j))
    return out


def _our_program(program: Any, rank: int) -> list[dict[str, Any]]:
    tbs: dict[int, dict[str, Any]] = {}
    for g in program.gpus:
        if g.id != rank:
            continue
        for tb in g.tbs:
            steps = []
            for i, t in enumerate(lower(tb)):
                s = {"type": t.type, "src": t.srcbuf, "srcoff": t.srcoffs[-1], "dst": t.dstbuf, "dstoff": t.dstoff,
                     "cnt": t.cnt, "hasdep": int(t.hasdep), "deps": [list(d) for d in t.deps], "i": i}
                if t.type == "re":
                    s["red"] = list(t.srcoffs)
                steps.append(s)
            tbs[tb.id] = {"id": tb.id, "send": tb.send, "recv": tb.recv, "chan": tb.chan, "steps": steps}
    return [tbs[k] for k in sorted(tbs)]


def _their_program(algo: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for tb in algo["tbs"]:
        steps = []
        for s in tb["steps"]:
            s = dict(s)
            s["deps"] = [d[:2] for d in s["deps"]]
            steps.append(s)
        out.append({"id": tb["id"], "send": tb["send"], "recv": tb["recv"], "chan": tb["chan"], "steps": steps})
    return out


@pytest.mark.skipif(not ORACLE.is_dir(), reason="runtime-parse corpus not present next to the repository")
@pytest.mark.parametrize("xml,oracle", corpus_params(_cases(), ORACLE, arity=2), ids=lambda p: p.name)
def test_acceptance_and_program_equal_the_runtimes(xml: Path, oracle: Path) -> None:
    d = json.loads(oracle.read_text())
    runtime = d["runtime"]
    try:
        result = read_program(xml)
    except InputError:
        # unusable: no runtime may load a program from it
        assert d["verdict"] != "accepted", f"{runtime} accepts a file smtcoll cannot read"
        return
    p = result.program
    findings = list(result.findings) + list(parse_rule_findings(p))
    ours = accepted_ranks(findings, p.ngpus or 1)[runtime]
    for entry in d["results"]:
        rank = entry["rank"]
        theirs = entry["verdict"] == "accepted" and not entry.get("past_array_end")
        we = ours.get(rank, False)
        if entry.get("past_array_end"):
            assert any(f.code == "array-overflow" and f.where.get("runtime") == runtime for f in findings), \
                f"{runtime} rank {rank} writes past an array; smtcoll must say so"
            continue
        messages = [f.message for f in findings if runtime in f.rejects]
        assert we == theirs, (runtime, rank, entry["verdict"], [l["msg"] for l in entry.get("logs", [])][-1:],
                              messages[:3])
        if theirs and is_complete(p):
            assert _our_program(p, rank) == _their_program(entry["algo"]), (runtime, rank)
