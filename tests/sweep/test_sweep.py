"""Unit tests of the sweep's pieces: sizes, the α-β model, the selection envelope, the cache."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smtcoll import specs
from smtcoll.errors import ModelError
from smtcoll.sweep import cost
from smtcoll.sweep.cache import Cache
from smtcoll.sweep.selection import envelope, tiles
from smtcoll.sweep.sizes import SizeRange, file_bounds, human, parse_range, parse_size


def test_sizes_parse_units_and_reject_nonsense():
    assert parse_size("4GiB") == 4 << 30
    assert parse_size("1KB") == 1000
    assert parse_size("512") == 512
    assert parse_range("1KiB:4GiB") == SizeRange(1024, 4 << 30)
    for bad in ("4 gigs", "-1", "1KiB:1B", "0:1KiB", "1.5MiB"):
        with pytest.raises(ModelError):
            parse_range(bad)
    assert human(65536) == "64KiB" and human(65535) == "65535B"


def test_file_bounds_follow_each_runtime_rule():
    r = SizeRange(1024, 65535)
    assert file_bounds(r, "executor") == (1024, 65535)  # nBytes <= maxBytes
    assert file_bounds(r, "legacy") == (1024, 65536)  # nBytes < maxBytes


lines = st.builds(cost.Line, st.fractions(min_value=0, max_value=100, max_denominator=50),
                  st.fractions(min_value=0, max_value=1, max_denominator=1000))


@settings(max_examples=200, deadline=None)
@given(st.lists(lines, min_size=1, max_size=8), st.integers(1, 5000), st.integers(0, 100000))
def test_envelope_is_the_pointwise_fastest_and_tiles(ls, low, extra):
    requested = SizeRange(low, low + extra)
    chosen = envelope(ls, requested)
    assert tiles([r for r, _ in chosen], requested)
    for r, i in chosen:
        for size in {r.low, r.high, (r.low + r.high) // 2}:
            assert ls[i].at(size) == min(line.at(size) for line in ls)
    # a line is chosen once at most: the envelope of lines is convex
    assert len({i for _, i in chosen}) == len(chosen)


def test_tiles_detects_gaps_and_overlaps():
    req = SizeRange(1, 100)
    assert tiles([SizeRange(1, 10), SizeRange(11, 100)], req)
    assert not tiles([SizeRange(1, 10), SizeRange(12, 100)], req)
    assert not tiles([SizeRange(1, 10), SizeRange(10, 100)], req)
    assert not tiles([SizeRange(1, 10)], req)


def test_small_buffers_pick_the_latency_optimal_point_and_ll():
    """On dgx1 Allgather the 2-step point wins small sizes with LL; large sizes go to Simple."""
    from smtcoll.synth.exact import strategies

    topo = specs.resolve_topology("dgx1")
    result = strategies.pareto(topo, specs.resolve_collective("allgather", 8), 4, None, 60)
    cands = [(p, proto, inst) for p in result.points for proto in cost.PROTOCOLS for inst in cost.INSTANCES]
    ls = [cost.predict(p.schedule, proto, inst, cost.Timing()) for p, proto, inst in cands]
    chosen = envelope(ls, SizeRange(1024, 4 << 30))
    first, last = cands[chosen[0][1]], cands[chosen[-1][1]]
    assert first[1] == "LL" and first[0].steps == min(p.steps for p in result.points)
    assert last[1] == "Simple"
    lb = result.lower_bound
    bound = cost.bound_line(topo, specs.resolve_collective("allgather", 8), lb["steps"],
                            Fraction(lb["rounds_per_chunk_exact"]), cost.Timing())
    for line in ls:  # no candidate beats the bound
        for size in (1024, 1 << 20, 4 << 30):
            assert line.at(size) >= bound.at(size)


def test_bus_bandwidth_matches_nccl_tests_factors():
    # allreduce of 8 ranks: busbw = algbw * 2 * 7 / 8; 1 MB in 10 us is 100 GB/s algbw
    assert cost.bus_bandwidth("allreduce", 8, 10**6, Fraction(10)) == pytest.approx(175.0)
    assert cost.bus_bandwidth("custom", 8, 10**6, Fraction(10)) is None


def test_cache_round_trip_ignores_corrupt_entries(tmp_path):
    cache = Cache(tmp_path)
    key = "ab" * 32
    assert cache.get(key) is None
    cache.put(key, {"status": "ok", "files": []})
    assert cache.get(key) == {"status": "ok", "files": [], "key": key}
    path = tmp_path / key[:2] / f"{key}.json"
    path.write_text("{half")
    assert cache.get(key) is None
    path.write_text(json.dumps({"status": "ok", "key": "cd" * 32}))  # an entry under the wrong name
    assert cache.get(key) is None
    assert not [p for p in tmp_path.rglob("*.tmp")]


def test_cli_rejects_bad_options_with_exit_2(cli, tmp_path):
    for args, what in ((["--sizes", "4GiB:1KiB"], "--sizes"), (["--nodes", "1,x"], "--nodes"),
                       (["--task-memory", "lots"], "--task-memory"), (["--timeout", "0"], "--timeout")):
        r = cli("sweep", "-t", "ring:4", "-c", "allgather", "-o", str(tmp_path / "out"), *args)
        assert r.returncode == 2, r.stderr
        assert what in r.stderr and "Traceback" not in r.stderr
        # --timeout is checked where it is declared, as in every command (typer's usage error, one message)
        assert r.stderr.startswith("error: ") or (what == "--timeout" and "from 0.001 to" in r.stderr)
    r = cli("sweep", "-t", "nosuch", "-c", "allgather", "-o", str(tmp_path / "out"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()


def test_a_task_without_an_exact_answer_falls_back_to_the_large_instance_engine():
    """A budget too small for the solver: the large-instance engine's schedule (checked) is lowered, and the files still
    verify and tile the sizes; the manifest says which method produced them."""
    from smtcoll.check.program import check_program
    from smtcoll.msccl.reader import read_program_bytes
    from smtcoll.sweep.tasks import Options, Task, compute

    topo = specs.resolve_topology("hypercube:3")
    coll = specs.resolve_collective("allgather", 8)
    sizes = SizeRange(1024, 1 << 30)
    res = compute(Task("hypercube:3", 1, "allgather", topo, coll, Options(sizes, budget=1e-6)).payload())
    assert res["status"] == "ok" and res["synth"]["status"] == "timeout" and res["synth"]["frontier"] == []
    assert res["files"] and all(f["method"].startswith("large-instance engine") for f in res["files"])
    assert tiles([SizeRange(*f["sizes"]) for f in res["files"]], sizes)
    for f in res["files"]:
        report = check_program(read_program_bytes(f["xml"].encode(), f["name"]), f["name"], runtime="executor",
                               collective="allgather")
        assert report.verdict == "ok"
