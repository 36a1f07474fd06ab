"""A sweep from start to end: the tasks of the request, their results (cache or cluster), the outputs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from smtcoll import specs
from smtcoll.errors import ModelError
from smtcoll.files import write_text
from smtcoll.sweep import manifest as manifest_mod
from smtcoll.sweep.cache import Cache
from smtcoll.sweep.run import Limits, Progress, Where, run_tasks
from smtcoll.sweep.tasks import Invalid, Options, Task


@attrs.frozen
class Request:
    topologies: tuple[str, ...]
    nodes: tuple[int, ...]
    collectives: tuple[str, ...]
    options: Options

    def to_json(self) -> dict[str, Any]:
        o = self.options.to_json()
        return {"topologies": list(self.topologies), "nodes": list(self.nodes),
                "collectives": list(self.collectives), "sizes": o["sizes"], "runtimes": o["runtimes"],
                "budget": o["budget"], "max_chunks": o["max_chunks"], "max_steps": o["max_steps"],
                "model": o["model"], "prove": o["prove"]}


def _label(name: str) -> str:
    return Path(name).stem if name.endswith(".toml") else name


def make_tasks(request: Request) -> list[Task | Invalid]:
    """One task per topology, node count and collective, in that order (the order of the outputs). A
    topology that cannot be composed into N nodes (no NIC model) gives failed entries for N, with the
    reason, and the rest of the sweep goes on; any other bad input is an error."""
    tasks: list[Task | Invalid] = []
    for t in request.topologies:
        specs.resolve_topology(t, 1)  # a wrong name or file is an error of the whole command
        for n in request.nodes:
            try:
                topo = specs.resolve_topology(t, n)
            except ModelError as e:
                if n == 1:
                    raise
                tasks += [Invalid(_label(t), n, _label(c), f"cannot compose {n} nodes: {e}")
                          for c in request.collectives]
                continue
            for c in request.collectives:
                coll = specs.resolve_collective(c, topo.ranks)
                if coll.ranks != topo.ranks:
                    raise ModelError("--collective", f"{c} has {coll.ranks} ranks but {t} x{n} has {topo.ranks}")
                tasks.append(Task(_label(t), n, _label(c), topo, coll, request.options))
    return tasks


@attrs.frozen
class Outcome:
    manifest: dict[str, Any]
    manifest_path: Path
    report: str
    plot: Path | None


def sweep(request: Request, out: Path, limits: Limits, where: Where | None = None, cache_dir: Path | None = None,
          progress: Progress | None = None, faults: dict[str, str] | None = None,
          tasks: Sequence[Task | Invalid] | None = None) -> Outcome:
    """Run the sweep and write `out` and `out.sweep/` (`manifest.py`). `faults`: test-only (`run.execute`)."""
    from smtcoll.sweep import report

    entries = list(tasks) if tasks is not None else make_tasks(request)
    side = manifest_mod.side_folder(out)
    cache = Cache(cache_dir if cache_dir is not None else side / "cache")
    results = run_tasks([t for t in entries if isinstance(t, Task)], limits, where or Where(), cache, progress, faults)
    data, files, proofs = manifest_mod.build(entries, results, request.options, request.to_json())
    path = manifest_mod.write(out, data, files, proofs)
    text = report.tables(data)
    write_text(side / "report.txt", text)
    png = side / "bandwidth.png"
    plotted = report.plot(data, png)
    return Outcome(data, path, text, png if plotted else None)
