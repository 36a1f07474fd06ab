"""Running the tasks on Dask: a local cluster of worker processes by default, or an existing scheduler.

On the worker each task runs in a child process (`python -m smtcoll.sweep.tasks`) with a wall-clock limit
(killed when exceeded) and an address-space limit (`RLIMIT_AS`, so the solver gets MemoryError instead of
exhausting the machine): a task that runs away cannot take its worker down, and the limits hold whatever
cluster runs it. A task that fails (an error, the time limit, the memory limit, a crash of the child, or a
crash of the worker itself, which Dask reports as `KilledWorker`) is submitted once more; when it fails
again it is recorded with both reasons. No failure stops the sweep.

Results are keyed by the task's content hash and put in a fixed order afterwards, so the output does not
depend on the number of workers or on the order of completion.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from smtcoll.errors import SmtcollError
from smtcoll.sweep.cache import Cache
from smtcoll.sweep.tasks import FAULT_ENV, MEMORY_ENV, Task
from smtcoll.text import count

ATTEMPTS = 2  # a failed task is retried once
# The local cluster's scheduler: a worker that dies fails its task at once (the sweep retries it once
# itself, ATTEMPTS). Dask fails *every* task assigned to a dying worker, so a worker must hold only the task
# it runs: `run_tasks` submits a task only to a worker with a free thread (scheduler-side queuing,
# worker-saturation, covers only Dask's "root-ish" tasks: a retry submitted late is not one, and was queued
# behind a running task, where another task's crash of that worker failed it as KilledWorker).
CLUSTER_CONFIG = {"distributed.scheduler.allowed-failures": 0, "distributed.scheduler.worker-saturation": 1.0}
POLL_S = 1.0  # while tasks wait for a free worker: how often to look for one (a restarted worker, say)
# how long a sweep waits for a worker when none is there (none joined yet, or all died and none came back):
# then it fails with a clear error instead of waiting for ever (a test hung 10 minutes here)
WORKER_WAIT_S = 120.0


class ClusterError(SmtcollError):
    """The Dask scheduler cannot be reached or started."""


@attrs.frozen
class Limits:
    seconds: float  # wall-clock limit of one task's child process
    memory: int  # bytes of address space of one task's child process (0: no limit)


@attrs.frozen
class Where:
    """The cluster: a local one of `workers` processes, or an existing scheduler."""

    workers: int = 2
    scheduler: str | None = None
    scheduler_file: Path | None = None
    dashboard: str | None = None  # the local cluster's dashboard address (`:8787`); none unless asked


def execute(payload: dict[str, Any], limits: Limits, fault: str | None = None) -> dict[str, Any]:
    """Run one task in a child process under `limits` (this function runs on a Dask worker).

    `fault` is a test-only hook (tests/sweep/test_sweep_run.py): "raise" raises here, "exit" kills this worker
    process, "hang" and "memory" make the child exceed its time or memory limit."""
    if fault == "raise":
        raise RuntimeError("injected failure (test hook)")
    if fault == "exit":
        os._exit(13)
    # the child sets its own memory limit first thing (a preexec_fn is unsafe in a threaded worker)
    env = dict(os.environ, PYTHONHASHSEED="0", **{MEMORY_ENV: str(limits.memory)})
    env.pop(FAULT_ENV, None)
    if fault in ("hang", "memory"):
        env[FAULT_ENV] = fault
    try:
        proc = subprocess.run([sys.executable, "-m", "smtcoll.sweep.tasks"], input=json.dumps(payload),
                              capture_output=True, text=True, timeout=limits.seconds, env=env, check=False)
    except subprocess.TimeoutExpired:
        return {"status": "failed", "why": f"time limit: the task ran longer than {limits.seconds:g} s (killed)"}
    if proc.returncode != 0:
        lines = [x for x in proc.stderr.strip().splitlines() if x.strip()]
        last = lines[-1] if lines else "no message"
        if proc.returncode < 0:
            return {"status": "failed", "why": f"the task's process was killed by signal {-proc.returncode}"}
        if "MemoryError" in last:
            return {"status": "failed", "why": "memory limit: the task needed more than "
                                               f"{limits.memory / 2**30:.3g} GiB (MemoryError)"}
        return {"status": "failed", "why": f"the task crashed (exit {proc.returncode}): {last[:300]}"}
    try:
        result: dict[str, Any] = json.loads(proc.stdout)
    except ValueError:
        return {"status": "failed", "why": "the task's process wrote no result"}
    return result


def trusted(task: Task, entry: dict[str, Any]) -> bool:
    """A cache entry is an input like any other (a disk, a colleague or an attacker may have changed it): each
    of its files must still hash to its recorded sha256 and pass the independent checker for the runtime it
    was written for, before it can be written out again. An entry that does not is computed again. Files of a
    collective the checker knows only from the task's spec (not a built-in) are always computed again."""
    import hashlib
    import tempfile

    from smtcoll.check.postconditions import BUILTIN
    from smtcoll.check.program import check_program_file

    files = entry.get("files", [])
    if entry.get("status") != "ok" or not isinstance(files, list):
        return False
    for f in files:
        if not isinstance(f, dict) or not isinstance(f.get("xml"), str) or f.get("runtime") not in ("executor",
                                                                                                   "legacy"):
            return False
        if hashlib.sha256(f["xml"].encode()).hexdigest() != f.get("sha256") or f.get("collective") not in BUILTIN:
            return False
        with tempfile.TemporaryDirectory(prefix="smtcoll-cache-") as tmp:
            probe = Path(tmp) / "algo.xml"
            probe.write_text(f["xml"])
            report = check_program_file(str(probe), runtime=f["runtime"], collective=f["collective"],
                                        root=task.coll.root, topology=task.topology)
        if (report.verdict != "ok" or report.ranks != task.topology.ranks
                or not (report.runtimes or {}).get(f["runtime"])):
            return False
    return True


def _client(where: Where) -> tuple[Any, Any]:
    """(client, cluster we started or None)."""
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError:
        raise ClusterError("smtcoll sweep needs Dask: pip install 'smtcoll[sweep]'") from None
    try:
        # how long to keep trying a scheduler: Dask's own knob (`distributed.comm.timeouts.connect`, 30 s unless
        # the user's Dask config or DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT says otherwise)
        connect = dask.config.get("distributed.comm.timeouts.connect")
        if where.scheduler is not None:
            return Client(where.scheduler, timeout=connect), None
        if where.scheduler_file is not None:
            return Client(_scheduler_address(where.scheduler_file), timeout=connect), None
        import logging

        with dask.config.set(CLUSTER_CONFIG), _workers_ignore_ctrl_c():
            # no dashboard unless asked: Dask's scheduler serves HTTP on 8787 even with dashboard_address=None,
            # and warns "Port 8787 is already in use" on a machine running another cluster; port 0 is free
            cluster = LocalCluster(n_workers=where.workers, threads_per_worker=1, processes=True,
                                   dashboard_address=where.dashboard or ":0", silence_logs=logging.CRITICAL,
                                   memory_limit=0, scheduler_kwargs={"dashboard": where.dashboard is not None})
        return Client(cluster), cluster
    except (OSError, TimeoutError, ValueError) as e:
        target = where.scheduler or where.scheduler_file or "a local cluster"
        raise ClusterError(f"cannot reach the Dask scheduler ({target}): {e}") from None


@contextlib.contextmanager
def _workers_ignore_ctrl_c() -> Iterator[None]:
    """Start the local workers with SIGINT ignored (a spawned process inherits that, and then neither
    Python nor asyncio installs a KeyboardInterrupt handler): Ctrl-C in the terminal reaches the whole
    process group, and each worker printed a KeyboardInterrupt traceback while this process, which owns the
    cluster, stops them anyway. Only in the main thread (where signal handlers can be set)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _scheduler_address(path: Path) -> str:
    """The address in a `dask scheduler --scheduler-file` file, read and checked here: Dask's own reading
    of a garbage file ends in an AssertionError or a KeyError."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ClusterError(f"--scheduler-file {path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    address = data.get("address") if isinstance(data, dict) else None
    if not isinstance(address, str) or "://" not in address:
        raise ClusterError(f"--scheduler-file {path}: not a Dask scheduler file (expected a JSON object with an "
                           "\"address\" such as \"tcp://host:8786\", as `dask scheduler --scheduler-file` writes)")
    return address


Progress = Callable[[str, int, int, int, int], None]  # event, done, running, failed, total


def run_tasks(tasks: Sequence[Task], limits: Limits, where: Where, cache: Cache,
              progress: Progress | None = None, faults: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """Every task's result by key: from the cache, else computed on the cluster (module docstring).

    `faults` (test-only) maps a task key to a fault of `execute`, for the first attempt and the retry."""
    results: dict[str, dict[str, Any]] = {}
    todo: list[Task] = []
    for t in tasks:
        hit = cache.get(t.key())
        if hit is not None and trusted(t, hit):
            hit.pop("key", None)
            results[t.key()] = hit
        else:
            todo.append(t)  # not cached, or a cached entry that no longer verifies: computed again
    total, failed = len(tasks), 0
    done = len(results)
    if progress:
        progress("start", done, 0, 0, total)
    if not todo:
        return results
    from distributed import wait

    client, cluster = _client(where)
    try:
        queue: deque[tuple[Task, int, list[str]]] = deque((t, 1, []) for t in todo)
        running: dict[Any, tuple[Task, int, list[str], str]] = {}  # future -> task, attempt, reasons, worker

        def submit(t: Task, attempt: int, reasons: list[str], worker: str) -> None:
            fault = (faults or {}).get(t.key())
            # loose: should the worker vanish before the task reaches it, any worker takes the task
            f = client.submit(execute, t.payload(), limits, fault, key=f"smtcoll-sweep-{t.key()[:16]}-{attempt}",
                              pure=False, workers=[worker], allow_other_workers=True)
            running[f] = (t, attempt, reasons, worker)

        while queue or running:
            if queue:
                for worker in _free_threads(client, [w for *_, w in running.values()]):
                    if not queue:
                        break
                    submit(*queue.popleft(), worker)
                if not running:  # no worker at all (all restarting, or none joined yet): wait for one
                    try:
                        client.wait_for_workers(1, timeout=WORKER_WAIT_S)
                    except TimeoutError:
                        raise ClusterError(f"no Dask worker joined the scheduler within {WORKER_WAIT_S:g} s "
                                           f"({count(len(queue), 'task')} waiting); start workers (dask worker "
                                           "ADDRESS) or leave out --scheduler for a local cluster") from None
                    continue
            if progress:
                progress("update", done, len(running), failed, total)
            try:
                finished, _ = wait(list(running), timeout=POLL_S if queue else None, return_when="FIRST_COMPLETED")
            except TimeoutError:
                continue  # look for a free worker again
            for fut in sorted(finished, key=lambda f: str(f.key)):
                t, attempt, reasons, _worker = running.pop(fut)
                try:
                    res = fut.result()
                except Exception as e:
                    res = {"status": "failed", "why": _why(e)}
                fut.release()
                if res.get("status") == "ok":
                    cache.put(t.key(), res)
                    results[t.key()] = res
                    done += 1
                elif attempt < ATTEMPTS:
                    queue.append((t, attempt + 1, [*reasons, res.get("why", "unknown")]))
                else:
                    why = [*reasons, res.get("why", "unknown")]
                    results[t.key()] = {"status": "failed", "why": why[-1], "attempts": why}
                    done += 1
                    failed += 1
        if progress:
            progress("update", done, 0, failed, total)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return results


def _free_threads(client: Any, busy: list[str]) -> list[str]:
    """One entry per idle worker thread (worker address, sorted), given the workers our running tasks hold."""
    free = []
    for worker, threads in sorted(client.nthreads().items()):
        free += [worker] * max(0, threads - busy.count(worker))
    return free


def _why(e: BaseException) -> str:
    name = type(e).__name__
    if name == "KilledWorker":
        return "the worker running the task died (KilledWorker)"
    return f"the task raised {name}: {str(e)[:300]}"


def rich_progress(total_label: str) -> tuple[Progress, Callable[[], None]]:
    """A live display on the terminal: done, running, failed, elapsed and remaining time."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.progress import Progress as Bar

    bar = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
              TextColumn("running {task.fields[running]}  failed {task.fields[failed]}"), TimeElapsedColumn(),
              TimeRemainingColumn(), transient=False)
    ident = bar.add_task(total_label, total=None, running=0, failed=0)

    def show(event: str, done: int, running: int, failed: int, total: int) -> None:
        if event == "start":
            bar.start()
        bar.update(ident, completed=done, total=total, running=running, failed=failed)

    def stop() -> None:
        bar.stop()

    return show, stop
