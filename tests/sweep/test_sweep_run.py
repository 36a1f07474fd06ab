"""`smtcoll sweep` on a real Dask LocalCluster of 2 worker processes: the directory verifies file by file and
tiles the sizes, a resumed sweep writes the same bytes, failures are recorded without stopping the sweep,
and the worker count does not change a byte."""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from pathlib import Path

import attrs
import pytest

from smtcoll.check.program import check_program_file
from smtcoll.sweep import cost
from smtcoll.sweep.manifest import SCHEMA
from smtcoll.sweep.plan import Request, make_tasks, sweep
from smtcoll.sweep.run import CLUSTER_CONFIG, Limits, Where
from smtcoll.sweep.selection import tiles
from smtcoll.sweep.sizes import SizeRange
from smtcoll.sweep.tasks import Options, Task

# the sweep imports Dask and jsonschema only when it runs: the imports above need neither
pytest.importorskip("distributed")
jsonschema = pytest.importorskip("jsonschema")

RING_NIC = """\
[topology]
name = "ring"
alpha_us = 0.7
gbps = 25.0
adjacency = [[0, 1, 1], [1, 0, 1], [1, 1, 0]]

[[topology.nics]]
senders = [0]
receivers = [1]
alpha_us = 2.6
gbps = 12.5
"""
SIZES = SizeRange(1024, 1 << 30)
LIMITS = Limits(120.0, 4 << 30)


@pytest.fixture(scope="module")
def cluster():
    """One LocalCluster of 2 worker processes for the module; sweeps attach to it by address."""
    import dask
    from distributed import LocalCluster

    with dask.config.set(CLUSTER_CONFIG):
        c = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                         silence_logs=logging.CRITICAL, memory_limit=0)
    yield Where(scheduler=c.scheduler_address)
    c.close()


@pytest.fixture
def ring(tmp_path) -> str:
    path = tmp_path / "ring.toml"
    path.write_text(RING_NIC)
    return str(path)


def request(topologies, nodes=(1,), collectives=("allgather", "allreduce"), runtimes=("executor",)) -> Request:
    # the shipped model with one instance count and a 5 s synthesis budget: the same code paths, fewer
    # candidates to time (half the CPU of two counts), a frontier that may stop early (what these tests check
    # does not depend on it; tests/sweep/test_sweep.py compares instance counts)
    model = attrs.evolve(cost.Model.load(), instances=(1,))
    return Request(tuple(topologies), tuple(nodes), tuple(collectives),
                   Options(SIZES, runtimes, budget=1.0, max_chunks=2, model=model))


def snapshot(out: Path) -> dict[str, bytes]:
    side = out.parent / f"{out.name}.sweep"
    files = {f"dir/{p.relative_to(out)}": p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    for name in ("manifest.json", "report.txt", "bandwidth.png"):
        if (side / name).exists():
            files[name] = (side / name).read_bytes()
    return files


def test_small_sweep_verifies_file_by_file_and_tiles_the_sizes(cluster, ring, tmp_path):
    out = tmp_path / "algos"
    outcome = sweep(request([ring, "ring:4"], nodes=(1, 2)), out, LIMITS, cluster)
    m = outcome.manifest
    jsonschema.validate(m, json.loads(SCHEMA.read_text()))
    # the built-in ring has no NIC model: its 2-node tasks are recorded as failed with the reason, the rest is done
    failed = [t for t in m["tasks"] if t["status"] != "ok"]
    assert [(t["topology"], t["nodes"]) for t in failed] == [("ring:4", 2), ("ring:4", 2)]
    assert all("NIC" in t["why"] for t in failed)
    done = {(t["topology"], t["nodes"], t["collective"]) for t in m["tasks"] if t["status"] == "ok"}
    assert done == {(top, n, c) for top, n in (("ring", 1), ("ring", 2), ("ring:4", 1))
                    for c in ("allgather", "allreduce")}
    # only algorithm files in the directory, exactly those of the manifest, each one verified
    on_disk = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert on_disk == sorted(f["file"] for f in m["files"])
    assert all(name.endswith(".xml") for name in on_disk)
    ranges = defaultdict(list)
    for f in m["files"]:
        report = check_program_file(out / f["file"], runtime="executor", collective=f["collective"])
        assert report.verdict == "ok" and report.runtimes["executor"], (f["file"], report.to_json())
        ranges[f["topology"], f["nodes"], f["collective"], f["mode"]].append(SizeRange(*f["sizes"]))
        flags = 'inplace="1" outofplace="0"' if f["mode"] == "inplace" else 'inplace="0" outofplace="1"'
        assert flags in (out / f["file"]).read_text()
        assert (f["min_bytes"], f["max_bytes"]) == tuple(f["sizes"])  # executor: maxBytes is included
        assert f"minBytes=\"{f['min_bytes']}\"" in (out / f["file"]).read_text()
        assert all(p["time_us"] >= p["bound_us"] for p in f["predicted"])
    assert set(ranges) == {(*key, mode) for key in done for mode in ("outofplace", "inplace")}
    for key, rs in ranges.items():
        assert tiles(sorted(rs, key=lambda r: r.low), SIZES), key
    # small buffers: LL; the largest: Simple (the α-β model's latency/bandwidth trade-off)
    for key in ranges:
        mine = sorted((f for f in m["files"] if (f["topology"], f["nodes"], f["collective"], f["mode"]) == key),
                      key=lambda f: f["sizes"][0])
        assert mine[0]["protocol"] == "LL" and mine[-1]["protocol"] == "Simple"
    assert "allgather" in outcome.report and "allreduce" in outcome.report and "FAILED" in outcome.report


@pytest.mark.slow
def test_resumed_sweep_writes_the_same_bytes_and_computes_only_what_is_missing(cluster, ring, tmp_path):
    out, cache = tmp_path / "algos", tmp_path / "cache"
    # Allgather and ReduceScatter: resumption does not depend on the collective, and Allreduce costs 4x
    req = request([ring], nodes=(1, 2), collectives=("allgather", "reducescatter"))
    sweep(req, out, LIMITS, cluster, cache)
    first = snapshot(out)
    # interrupted: two algorithm files and one cache entry are gone
    for p in sorted(out.glob("*.xml"))[:2]:
        p.unlink()
    entries = sorted(cache.rglob("*.json"))
    assert len(entries) == 4
    entries[0].unlink()
    seen = []
    sweep(req, out, LIMITS, cluster, cache, progress=lambda ev, done, *_: seen.append((ev, done)))
    assert seen[0] == ("start", 3)  # three results from the cache, one computed
    assert snapshot(out) == first
    # one more collective computes only the new tasks (Alltoall: the cheapest to compute; a task is cached by
    # its own key, whatever the request around it)
    seen.clear()
    sweep(request([ring], nodes=(1, 2), collectives=("allgather", "reducescatter", "alltoall")), tmp_path / "more",
          LIMITS, cluster, cache,
          progress=lambda ev, done, *_: seen.append((ev, done)))
    assert seen[0] == ("start", 4) and seen[-1][1] == 6


def test_the_cache_key_covers_the_code(ring, monkeypatch):
    from smtcoll.sweep import tasks as module

    task = make_tasks(request([ring], collectives=("allgather",)))[0]
    before = task.key()
    monkeypatch.setattr(module, "code_digest", lambda: "0" * 64)  # as if a construction had changed
    assert task.key() != before


@pytest.mark.slow
def test_failing_tasks_are_recorded_retried_once_and_do_not_stop_the_sweep(cluster, ring, tmp_path):
    req = request([ring], nodes=(1, 2), collectives=("allgather", "alltoall", "reducescatter"))
    tasks = make_tasks(req)
    assert all(isinstance(t, Task) for t in tasks)
    # the faults hit the 2-node tasks; the 1-node ones are tiny and must complete (a hang: the next test)
    faults = {tasks[3].key(): "raise", tasks[4].key(): "exit", tasks[5].key(): "memory"}
    outcome = sweep(req, tmp_path / "algos", LIMITS, cluster, tmp_path / "cache", faults=faults)
    rows = outcome.manifest["tasks"]
    whys = [r.get("attempts") for r in rows[3:]]
    assert all(len(w) == 2 for w in whys), whys  # tried twice each
    assert "RuntimeError" in rows[3]["why"]
    assert "worker" in rows[4]["why"] and "died" in rows[4]["why"]
    assert "memory" in rows[5]["why"]
    assert [r["status"] for r in rows[:3]] == ["ok"] * 3 and all(r["files"] for r in rows[:3])
    assert outcome.manifest["summary"]["failed"] == 3
    assert "FAILED" in outcome.report
    # failures are not cached: the next run tries them again
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 3


def test_a_hanging_task_is_stopped_at_the_time_limit_twice(cluster, ring, tmp_path):
    req = request([ring], nodes=(2,), collectives=("allgather",))
    (task,) = make_tasks(req)
    assert isinstance(task, Task)
    outcome = sweep(req, tmp_path / "algos", Limits(3.0, 2 << 30), cluster, tmp_path / "cache",
                    faults={task.key(): "hang"})
    (row,) = outcome.manifest["tasks"]
    assert row["status"] != "ok" and len(row["attempts"]) == 2 and "time limit" in row["why"], row
    assert outcome.manifest["summary"]["failed"] == 1 and not outcome.manifest["files"]


def test_a_workers_crash_is_blamed_on_the_task_it_runs_alone(ring, tmp_path):
    """On one worker, a task that crashes the worker must not take the next task down with it: Dask fails
    every task assigned to a dying worker, so a task is sent to a worker only when it has a free thread."""
    from smtcoll.sweep.cache import Cache
    from smtcoll.sweep.run import run_tasks

    tasks = make_tasks(request([ring], nodes=(2,), collectives=("allgather", "allreduce")))
    faults = {tasks[0].key(): "exit", tasks[1].key(): "memory"}
    results = run_tasks(tasks, Limits(60.0, 1 << 30), Where(workers=1), Cache(None), faults=faults)
    crashed, memory = results[tasks[0].key()], results[tasks[1].key()]
    assert all("worker running the task died" in w for w in crashed["attempts"]), crashed
    assert len(memory["attempts"]) == 2 and all("memory limit" in w for w in memory["attempts"]), memory


@pytest.mark.slow
def test_one_and_two_workers_write_identical_bytes(cluster, ring, tmp_path):
    req = request([ring, "ring:4"], collectives=("allgather", "reducescatter"), runtimes=("executor", "legacy"))
    sweep(req, tmp_path / "two", LIMITS, cluster, tmp_path / "c2")
    sweep(req, tmp_path / "one", LIMITS, Where(workers=1), tmp_path / "c1")
    two, one = snapshot(tmp_path / "two"), snapshot(tmp_path / "one")
    assert two.keys() == one.keys() and any(k.startswith("dir/legacy/") for k in two)
    assert two == one


@pytest.mark.slow
def test_cli_attaches_to_a_running_scheduler(cluster, ring, tmp_path, cli, monkeypatch):
    out = tmp_path / "algos"
    r = cli("sweep", "-t", ring, "-c", "allgather", "--sizes", "1KiB:1MiB", "-o", str(out), "--max-chunks", "2",
            "--scheduler", cluster.scheduler, "--format", "json", timeout=300)
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    assert m["summary"] == {"tasks": 1, "failed": 0, "files": len(m["files"])} and m["files"]
    assert sorted(p.name for p in out.iterdir()) == sorted(f["file"] for f in m["files"])
    assert tuple(m["model"]["protocols"]) == cost.Model.load().protocols
    # nothing listens there: Dask retries for its connect timeout (the user's Dask config), then exit 2
    monkeypatch.setenv("DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT", "3s")
    r = cli("sweep", "-t", ring, "-c", "allgather", "-o", str(tmp_path / "x"), "--scheduler", "tcp://127.0.0.1:9",
            timeout=120)
    assert r.returncode == 2 and "scheduler" in r.stderr and "after 3 s" in r.stderr and "Traceback" not in r.stderr
