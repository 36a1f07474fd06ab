"""`smtcoll lower`: schedules become MSCCL XML that both runtimes load and the checker verifies."""

from __future__ import annotations

import random
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from helpers.paths import SHARED, corpus_params, needs_corpus
from helpers.random_schedules import accepted_schedules
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smtcoll import library
from smtcoll.check.schedule import check_schedule
from smtcoll.errors import NotVerified, SmtcollError
from smtcoll.formats import load_schedule, save_schedule
from smtcoll.lower import CannotLower, LowerOptions, RejectedSchedule, lower, verify_lowered
from smtcoll.lower.pipeline import Lowered
from smtcoll.model import Schedule, Send, Step, Topology
from smtcoll.msccl.program import ThreadBlock
from smtcoll.msccl.reader import read_program_bytes
from smtcoll.msccl.writer import write_program

ROOT = Path(__file__).resolve().parents[2]
SCCL = SHARED / "corpus" / "sccl-json"
needs_sccl = needs_corpus(SCCL)
MODES = ("outofplace", "inplace", "both")


def _accepted_corpus() -> list[str]:
    if not SCCL.is_dir():
        return []
    return sorted(p.name for p in SCCL.glob("*.json") if check_schedule(load_schedule(p)).verdict == "ok")


def lower_and_verify(schedule: Schedule, tmp: Path, **options: Any) -> tuple[Lowered, str]:
    """Lower, write, verify; fail the test with the checker's findings when it does not verify."""
    lowered = lower(schedule, LowerOptions(**options))
    text = write_program(lowered.program)
    path = tmp / "algo.xml"
    path.write_text(text)
    ok, report = verify_lowered(lowered, path)
    if not ok:
        problems = [f"{v.severity} {v.code}: {v.message} {v.where}" for v in report.violations if v.severity != "info"]
        pytest.fail(f"{options}: {report.verdict}, runtimes {report.runtimes}, targets {lowered.runtimes}:\n"
                    + "\n".join(problems[:10]) + f"\n{text[:3000]}")
    return lowered, text


# --- (a) the SCCL corpus, every mode, 1, 2 and 4 instances ---------------------------------------------

@needs_sccl
@pytest.mark.parametrize("name", corpus_params(_accepted_corpus(), SCCL))
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("instances", [1, 2, 4])
def test_sccl_corpus_lowers_and_verifies(name: str, mode: str, instances: int, tmp_path: Path) -> None:
    schedule = load_schedule(SCCL / name)
    lowered, _ = lower_and_verify(schedule, tmp_path, mode=mode, instances=instances)
    if lowered.layout.kind == "reducescatter":  # spelled differently: one file per runtime
        assert lowered.runtimes == ("executor",)
        lowered, text = lower_and_verify(schedule, tmp_path, mode=mode, instances=instances, runtime="legacy")
        assert 'coll="reduce_scatter"' in text and "outofplace" not in text
    else:
        assert lowered.runtimes == ("executor", "legacy")


@needs_sccl
def test_corpus_kinds_are_recognized() -> None:
    kinds = {name.split(".")[0]: lower(load_schedule(SCCL / name)).layout.kind for name in _accepted_corpus()}
    assert kinds == {"Allgather": "allgather", "Allreduce": "allreduce", "Alltoall": "alltoall",
                     "Broadcast": "broadcast", "ReduceScatter": "reducescatter"}


@needs_sccl
def test_out_of_place_allgather_needs_no_scratch(tmp_path: Path) -> None:
    lowered, text = lower_and_verify(load_schedule(SCCL / "Allgather.n8-DGX1-steps2.msccl.json"), tmp_path)
    assert lowered.stats["scratch_chunks"] == 0 and lowered.stats["nops"] == 0
    assert 'nchunksperloop="8"' in text and 'i_chunks="1" o_chunks="8" s_chunks="0"' in text


@pytest.mark.parametrize("kind", ["allgather", "reducescatter", "allreduce"])
def test_both_modes_add_no_waits_to_out_of_place(kind: str, tmp_path: Path) -> None:
    """A file for both modes waits only where one of the two runs needs it: the in-place and out-of-place
    runs are separate executions, and an input -> output copy that is a self-copy in place only reads.
    So the ring's `both` program has exactly the waits of its out-of-place and in-place programs (the
    conflated modes made every send of an Allgather's own chunk wait for the copy thread block)."""
    from smtcoll.synth.constructions import constructions

    topo = library.topology("ndv2")
    ring = next(c for c in constructions(topo, library.collective(kind, 8)) if c.name == "nccl_ring").schedule

    def waits(mode: str) -> set[tuple[int, int, int]]:
        lowered, _ = lower_and_verify(ring, tmp_path, mode=mode, instances=2)
        tb_of = {(g.id, t.id): t for g in lowered.program.gpus for t in g.tbs}
        # (rank, peer the waiting step talks to, peer of the thread block waited for): ids differ by mode
        def peers(tb: ThreadBlock) -> int:
            return (tb.send or 0) * 100 + (tb.recv or 0)

        return {(g.id or 0, peers(t), peers(tb_of[(g.id, s.depid)]))
                for g in lowered.program.gpus for t in g.tbs for s in t.steps if s.depid is not None and s.depid >= 0}

    both, out, inp = waits("both"), waits("outofplace"), waits("inplace")
    assert both == out | inp
    if kind == "allgather":  # the copies' thread blocks (send = recv = -1) are never waited for
        assert not any(target == -101 for _, _, target in both)


# --- (c) SCCL algorithms whose XML is wrong in the corpus -----------------------------------------------

@needs_sccl
def test_composed_allreduce_from_sccl_json(tmp_path: Path) -> None:
    """SCCL's composed Allreduce names addresses its one-address collective lacks; the same composition on
    a proper 8-address Allreduce (reduce-scatter, then allgather of the reduced shares) lowers and verifies."""
    rs = load_schedule(SCCL / "ReduceScatter.n8-DGX1-steps2.msccl.json")
    ag = load_schedule(SCCL / "Allgather.n8-DGX1-steps2.msccl.json")
    broken = load_schedule(SCCL / "Allreduce.n8-DGX1-composed-RS2+AG2.msccl.json")
    with pytest.raises(RejectedSchedule):
        lower(broken)
    composed = Schedule(rs.topology, library.collective("allreduce", 8, chunks=8), [*rs.steps, *ag.steps],
                        "Allreduce.n8-DGX1-RS2+AG2")
    assert check_schedule(composed).verdict == "ok"
    for mode in MODES:
        lowered, text = lower_and_verify(composed, tmp_path, mode=mode)
        assert 'coll="allreduce"' in text and lowered.runtimes == ("executor", "legacy")


@needs_sccl
@pytest.mark.parametrize("mode", MODES)
def test_two_instance_allgather_has_no_reductions(mode: str, tmp_path: Path) -> None:
    """SCCL's `--instances 2` Allgather XML reduces; lowered by smtcoll it only copies, on 2 channels."""
    schedule = load_schedule(SCCL / "Allgather.n8-DGX1-steps2.msccl.json")
    lowered, _text = lower_and_verify(schedule, tmp_path, mode=mode, instances=2)
    types = Counter(s.type for g in lowered.program.gpus for t in g.tbs for s in t.steps)
    assert not {"rrc", "rrs", "rrcs", "re"} & set(types)
    assert lowered.program.nchannels == 2 and {t.chan for g in lowered.program.gpus for t in g.tbs} == {0, 1}


# --- (b) property test: random valid schedules on random small topologies ---------------------------------

def _topology(kind: str, n: int) -> Topology:
    return library.topology(f"{kind}:{n}")


def _rounds(topo: Topology, sends: list[Send]) -> int:
    load = Counter((s.src, s.dst) for s in sends)
    need = [-(-k // topo.bandwidth(a, b)) for (a, b), k in load.items()]
    need += [-(-sum(k for (a, b), k in load.items() if a in g.srcs and b in g.dsts) // g.bandwidth)
             for g in topo.switches]
    return max([1, *need])


def _flood(topo: Topology, coll_name: str, root: int | None, chunks: int, rng: random.Random) -> Schedule:
    """A causal random simulation: each step every link carries some chunks its source holds and its
    destination lacks, until every rank holds its postcondition."""
    coll = library.collective(coll_name, topo.ranks, root, chunks)
    held = set(coll.pre)
    need = set(coll.post)
    steps: list[Step] = []
    while not need <= held:
        sends = []
        for link in topo.links:
            have = sorted(c for r, c in held if r == link.src and (link.dst, c) not in held)
            if have:
                sends += [Send(c, link.src, link.dst) for c in rng.sample(have, rng.randint(1, len(have)))]
        held |= {(s.dst, s.chunk) for s in sends}
        steps.append(Step(_rounds(topo, sends), sends))
    return Schedule(topo, coll, steps, f"random-{coll_name}")


def _reduce_broadcast(topo: Topology, coll_name: str, root: int | None, chunks: int, rng: random.Random) -> Schedule:
    """Reduce-then-broadcast over a random BFS tree per address: children add their partial sums into
    their parent level by level; for allreduce the tree root then sends the full sum back down."""
    coll = library.collective(coll_name, topo.ranks, root, chunks)
    n = topo.ranks
    by_step: dict[int, list[Send]] = {}
    for a in coll.addresses:
        owners = sorted({r for r, c in coll.post if coll.address[c] == a})
        top = owners[0] if len(owners) == 1 else rng.randrange(n)
        parent, depth, order = {top: -1}, {top: 0}, [top]
        for u in order:
            nbrs = [l.dst for l in topo.links if l.src == u and l.dst not in parent]
            rng.shuffle(nbrs)
            for v in nbrs:
                if v not in parent and topo.has_link(v, u) and topo.has_link(u, v):
                    parent[v], depth[v] = u, depth[u] + 1
                    order.append(v)
        height = max(depth.values())
        for v, d in depth.items():
            if d:
                by_step.setdefault(height - d, []).append(Send(a, v, parent[v]))
                if len(owners) > 1:
                    by_step.setdefault(height + d - 1, []).append(Send(a, parent[v], v))
    steps = [Step(_rounds(topo, by_step.get(t, [])), sorted(by_step.get(t, [])))
             for t in range(max(by_step) + 1 if by_step else 0)]
    return Schedule(topo, coll, steps, f"random-{coll_name}")


@st.composite
def random_schedules(draw) -> Schedule:
    kind = draw(st.sampled_from(["ring", "line", "star", "fully-connected"]))
    n = draw(st.integers(3 if kind == "ring" else 2, 5))
    topo = _topology(kind, n)
    coll_name = draw(st.sampled_from(["allgather", "broadcast", "alltoall", "gather", "scatter",
                                      "allreduce", "reducescatter", "reduce"]))
    root = draw(st.integers(0, n - 1)) if coll_name in ("broadcast", "gather", "scatter", "reduce") else None
    chunks = draw(st.integers(1, 4))
    rng = random.Random(draw(st.integers(0, 2 ** 32)))
    build = _reduce_broadcast if coll_name in ("allreduce", "reducescatter", "reduce") else _flood
    return build(topo, coll_name, root, chunks, rng)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(schedule=random_schedules(), mode=st.sampled_from(MODES), instances=st.sampled_from([1, 2]),
       protocol=st.sampled_from(["Simple", "LL", "LL128"]))
def test_random_schedules_lower_to_verified_xml(schedule: Schedule, mode: str, instances: int, protocol: str,
                                                tmp_path: Path) -> None:
    assert check_schedule(schedule).verdict == "ok"
    _lowered, text = lower_and_verify(schedule, tmp_path, mode=mode, instances=instances, protocol=protocol)
    assert f'proto="{protocol}"' in text


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(schedule=accepted_schedules(), mode=st.sampled_from(MODES))
def test_random_custom_collectives_lower_for_the_legacy_runtime(schedule: Schedule, mode: str, tmp_path: Path) -> None:
    """Arbitrary non-combining collectives (random pre/postconditions, switch groups) become `custom`
    programs, which only the legacy runtime has, unless they happen to match a built-in."""
    lowered, text = lower_and_verify(schedule, tmp_path, mode=mode)
    if lowered.layout.kind == "custom":
        assert lowered.runtimes == ("legacy",) and 'coll="custom"' in text


# --- the writer and the options ----------------------------------------------------------------------------

@needs_sccl
def test_written_xml_follows_the_readers_lexical_rules() -> None:
    text = write_program(lower(load_schedule(SCCL / "Alltoall.n4-Star.n4-steps2.rounds4.msccl.json"),
                               LowerOptions(mode="both")).program)
    assert not text.startswith("<?xml") and "\t" not in text and "'" not in text and "  <" in text
    for line in text.splitlines():
        assert line.strip().startswith("<") and line.rstrip().endswith(">")
        assert line.strip().count("<") == 1 and "  " not in line.strip()
    result = read_program_bytes(text.encode())
    assert not [f for f in result.findings if f.rejects]


def test_writer_round_trips_the_reader(tmp_path: Path) -> None:
    corpus = SHARED / "corpus" / "msccl-xml" / "mscclang"
    files = sorted(corpus.glob("*.xml"))[:10] if corpus.is_dir() else []
    for f in files:
        first = read_program_bytes(f.read_bytes()).program
        again = read_program_bytes(write_program(first).encode()).program
        assert write_program(again) == write_program(first)


@needs_sccl
def test_output_is_deterministic_across_hash_seeds(tmp_path: Path) -> None:
    src = SCCL / "Alltoall.n8-DGX1-steps3.msccl.json"
    outs = []
    for seed in ("1", "2"):
        out = tmp_path / f"a{seed}.xml"
        done = subprocess.run([sys.executable, "-m", "smtcoll", "lower", str(src), "-o", str(out), "--inplace",
                               "--outofplace", "--instances", "2", "--no-verify"], cwd=ROOT, capture_output=True,
                              text=True, env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"}, timeout=120)
        assert done.returncode == 0, done.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


@needs_sccl
def test_runtime_options() -> None:
    rs = load_schedule(SCCL / "ReduceScatter.n8-DGX1-steps2.msccl.json")
    with pytest.raises(CannotLower, match="spells it"):
        lower(rs, LowerOptions(runtime="both"))
    legacy = lower(rs, LowerOptions(runtime="legacy")).program
    assert legacy.coll == "reduce_scatter" and legacy.outofplace is None and legacy.max_bytes is None
    ag = load_schedule(SCCL / "Allgather.n8-DGX1-steps2.msccl.json")
    both = lower(ag).program
    assert (both.min_bytes, both.max_bytes, both.outofplace, both.inplace) == (0, 1 << 27, 1, 0)
    executor = lower(ag, LowerOptions(runtime="executor", min_bytes=1024, max_bytes=4096)).program
    assert (executor.min_bytes, executor.max_bytes) == (1024, 4096)
    with pytest.raises(CannotLower, match="max-buffer-bytes 0"):
        lower(ag, LowerOptions(max_bytes=0))
    with pytest.raises(CannotLower, match="protocol"):
        lower(ag, LowerOptions(protocol="LL64"))


# --- the command line --------------------------------------------------------------------------------------

def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "smtcoll", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


@needs_sccl
def test_cli_writes_a_verified_file(tmp_path: Path) -> None:
    out = tmp_path / "ag.xml"
    done = _cli("lower", str(SCCL / "Allgather.n8-DGX1-steps2.msccl.json"), "-o", str(out), "--instances", "2",
                "--protocol", "LL128", "--inplace", "--outofplace", "--format", "json")
    assert done.returncode == 0, done.stderr
    import json

    result = json.loads(done.stdout)
    assert result["verified"] is True and result["written"] is True and result["mode"] == "both"
    assert result["report"]["runtimes"] == {"executor": True, "legacy": True}
    assert _cli("verify", str(out)).returncode == 0


@needs_sccl
def test_cli_exit_codes(tmp_path: Path) -> None:
    out = tmp_path / "x.xml"
    rejected = _cli("lower", str(SCCL / "Allreduce.n8-DGX1-composed-RS2+AG2.msccl.json"), "-o", str(out))
    assert rejected.returncode == 1 and "rejects this schedule" in rejected.stderr and not out.exists()
    both = _cli("lower", str(SCCL / "ReduceScatter.n8-DGX1-steps2.msccl.json"), "-o", str(out), "--runtime", "both")
    assert both.returncode == 2 and "one file per runtime" in both.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    unusable = _cli("lower", str(bad), "-o", str(out))
    assert unusable.returncode == 2 and "error:" in unusable.stderr and "Traceback" not in unusable.stderr


def test_custom_collective_cannot_go_to_the_executor(tmp_path: Path) -> None:
    topo = library.topology("line:3")
    coll = library.collective("allgather", 3)
    from smtcoll.model import Collective

    odd = Collective("odd", 3, 3, coll.pre, [(0, 1), (0, 2), (2, 0)], coll.address)
    schedule = Schedule(topo, odd, [Step(1, [Send(1, 1, 0), Send(0, 0, 1)]), Step(1, [Send(2, 2, 1), Send(0, 1, 2)]),
                                    Step(1, [Send(2, 1, 0)])], "odd")
    assert check_schedule(schedule).verdict == "ok"
    with pytest.raises(CannotLower, match="no 'custom'"):
        lower(schedule, LowerOptions(runtime="executor"))
    lowered, text = lower_and_verify(schedule, tmp_path)
    assert lowered.runtimes == ("legacy",) and 'coll="custom"' in text
    save_schedule(schedule, tmp_path / "odd.json")
    assert _cli("lower", str(tmp_path / "odd.json"), "-o", str(tmp_path / "odd.xml")).returncode == 0
    with pytest.raises(SmtcollError):
        lower(schedule, LowerOptions(instances=0))


def test_chains_are_fused(tmp_path: Path) -> None:
    """A reduce along a line forwards the partial sum with `rrs`; an allreduce there with `rrcs`/`rcs`."""
    topo = library.topology("line:3")
    reduce = Schedule(topo, library.collective("reduce", 3, root=2),
                      [Step(1, [Send(0, 0, 1)]), Step(1, [Send(0, 1, 2)])])
    lowered, _ = lower_and_verify(reduce, tmp_path)
    assert [s.type for t in lowered.program.gpus[1].tbs for s in t.steps] == ["rrs"]
    allreduce = Schedule(topo, library.collective("allreduce", 3), [Step(1, [Send(0, 0, 1)]), Step(1, [Send(0, 1, 2)]),
                                                                    Step(1, [Send(0, 2, 1)]), Step(1, [Send(0, 1, 0)])])
    lowered, _ = lower_and_verify(allreduce, tmp_path, mode="both")
    types = Counter(s.type for g in lowered.program.gpus for t in g.tbs for s in t.steps)
    assert types["rrcs"] == 2 and types["rcs"] == 1
    unfused, _ = lower_and_verify(allreduce, tmp_path, fuse=False)
    assert unfused.stats["fused"] == 0 and unfused.stats["steps"] > lowered.stats["steps"]


def test_chains_of_fused_forwards_keep_fifo_order(tmp_path: Path) -> None:
    """Regression (found by a randomized run): forwards fused along a chain each leave one step early; the
    receivers must take the messages in the order the (already early) senders emit them."""
    sends = [[(3, 4, 3), (2, 4, 3), (1, 4, 3), (0, 4, 3), (2, 4, 5), (0, 4, 5), (1, 4, 5)],
             [(0, 3, 2), (3, 3, 2), (1, 3, 2), (3, 4, 5), (1, 5, 0)],
             [(1, 0, 1), (0, 2, 1), (3, 2, 1), (1, 2, 1), (2, 3, 2), (2, 5, 0), (3, 5, 0), (0, 5, 0)],
             [(2, 0, 1), (2, 2, 1)]]
    schedule = Schedule(library.topology("ring:6"), library.collective("broadcast", 6, root=4, chunks=4),
                        [Step(r, [Send(*x) for x in xs]) for r, xs in zip([4, 3, 3, 1], sends)], "ring-broadcast")
    for protocol in ("Simple", "LL"):
        lowered, _ = lower_and_verify(schedule, tmp_path, protocol=protocol)
    assert lowered.stats["fused"] > 0


@needs_sccl
def test_a_program_that_does_not_verify_is_not_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """If lowering ever produced a wrong program, `lower_to_file` would refuse to write it (the
    MSCCL_ALGO_DIR of the executor is poisoned by one bad file)."""

    from helpers.lowering import break_lowering

    import smtcoll.lower.files as files

    break_lowering(monkeypatch)
    out = tmp_path / "ag.xml"
    with pytest.raises(NotVerified) as failed:
        files.lower_to_file(load_schedule(SCCL / "Allgather.n8-DGX1-steps2.msccl.json"), out)
    assert not out.exists() and failed.value.exit_code == 1 and "NOT written" in str(failed.value)
    result, report = failed.value.summary, failed.value.report
    assert result["written"] is False and result["verified"] is False
    assert report is not None and report.verdict == "error"


@needs_sccl
def test_many_local_copies_spread_over_thread_blocks(tmp_path: Path) -> None:
    """In-place alltoall stages 56 chunks per rank in scratch and copies them at the end: on one thread
    block that would exceed the executor's 64 steps, so copies run on several (in parallel)."""
    s = load_schedule(SCCL / "Alltoall.n8-DGX1-steps3.msccl.json")
    c = 8
    steps = [Step(st.rounds * c, [Send(x.chunk * c + j, x.src, x.dst) for x in st.sends for j in range(c)])
             for st in s.steps]
    big = Schedule(s.topology, s.collective.with_chunks(c), steps, "alltoall-c8")
    lowered, _ = lower_and_verify(big, tmp_path, mode="inplace")
    local = [t for t in lowered.program.gpus[0].tbs if t.send == -1 and t.recv == -1]
    assert len(local) >= 4 and lowered.stats["max_tb_steps"] <= 64


def test_a_128_rank_allreduce_is_recognized_although_its_alltoall_piece_is_too_large():
    """Recognizing the layout tries every built-in kind; one piece of an Alltoall of 128 ranks has 16384
    chunks, over the cells a collective may have: that kind is skipped, not the lowering refused."""
    from smtcoll.lower.layout import recognize

    layout = recognize(library.collective("allreduce", 128, None, 2))
    assert layout.kind == "allreduce" and layout.nchunks == 2
