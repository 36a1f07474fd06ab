"""smtcoll: synthesize, prove and verify collective communication algorithms.

The public Python API (docs/api.md). `import smtcoll` stays cheap: each function imports what it needs
(z3, networkx, scipy) when it is called, and the classes below load on first use.

>>> import smtcoll
>>> ring = smtcoll.load_topology("examples/ring4.toml")
>>> allgather = smtcoll.load_collective("allgather", ranks=ring.ranks)
>>> result = smtcoll.synthesize(ring, allgather)
>>> result.status, len(result.schedule.steps)
('found', 2)
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smtcoll.bounds import Bounds
    from smtcoll.check.report import Report
    from smtcoll.model import Collective, Schedule, Topology
    from smtcoll.synth.result import SynthResult

from smtcoll._version import __version__

# name -> module of the classes and exceptions the API hands out, imported on first use
_LAZY = {
    "Topology": "smtcoll.model", "Collective": "smtcoll.model", "Schedule": "smtcoll.model",
    "Step": "smtcoll.model", "Send": "smtcoll.model", "Report": "smtcoll.check.report",
    "Bounds": "smtcoll.bounds", "SynthResult": "smtcoll.synth.result", "LowerOptions": "smtcoll.lower",
    "SmtcollError": "smtcoll.errors", "InputError": "smtcoll.errors", "ModelError": "smtcoll.errors",
    "NotVerified": "smtcoll.errors", "UsageError": "smtcoll.errors", "TooLarge": "smtcoll.errors",
    "SynthRequest": "smtcoll.synth.request",
}

__all__ = ["__version__", "load_collective", "load_schedule", "load_topology", "lower_bounds", "lower_to_xml",
           "synthesize", "verify", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'smtcoll' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def _path(value: Any, name: str) -> str:
    """A file path or name argument of the API, checked as the command line checks its arguments."""
    from smtcoll.errors import UsageError

    if not isinstance(value, str | os.PathLike):
        raise UsageError(name, f"expected a name or a file path (str or os.PathLike), got {type(value).__name__}")
    return os.fspath(value)


def _instance(value: Any, cls_name: str, name: str) -> Any:
    """An argument that must be a Topology, Collective or Schedule (a name is turned into one by the caller)."""
    from smtcoll import model
    from smtcoll.errors import UsageError

    if not isinstance(value, getattr(model, cls_name)):
        raise UsageError(name, f"expected a {cls_name}, got {type(value).__name__}")
    return value


def load_topology(name_or_path: str | os.PathLike[str], nodes: int = 1) -> Topology:
    """A topology: a built-in name or a TOML spec file.

    Parameters
    ----------
    name_or_path : str or path
        A built-in name (``ring:8``, ``dgx1``, ``a100``; ``smtcoll list`` shows them all) or a ``.toml``
        file in the format of docs/specs.md.
    nodes : int, default 1
        Compose this many copies of the node through its NIC model (``--nodes N`` of the commands).

    Returns
    -------
    Topology
        Ranks, directed links with their bandwidth, switch groups and NICs.

    Examples
    --------
    >>> ring = load_topology("examples/ring4.toml")
    >>> ring.ranks, len(ring.links)
    (4, 8)
    >>> load_topology("ring:8").ranks
    8

    Notes
    -----
    Bad input raises `smtcoll.InputError` naming the file, the line and the field.
    """
    from smtcoll import specs

    return specs.resolve_topology(_path(name_or_path, "topology"), nodes)


def load_collective(name_or_path: str | os.PathLike[str], ranks: int | None = None, root: int | None = None,
                    chunks: int = 1) -> Collective:
    """A collective: a built-in name or a TOML spec file, instantiated for a number of ranks.

    Parameters
    ----------
    name_or_path : str or path
        A built-in name (``allgather``, ``allreduce``, ``alltoall``, ...) or a ``.toml`` file.
    ranks : int, optional
        Number of ranks; required unless the spec file fixes it.
    root : int, optional
        Root rank of a rooted collective (broadcast, reduce, gather, scatter).
    chunks : int, default 1
        C, the split factor: every chunk is split in C pieces.

    Returns
    -------
    Collective
        Chunks, pre- and postconditions, and the address of every chunk.

    Examples
    --------
    >>> allgather = load_collective("examples/allgather.toml", ranks=4)
    >>> allgather.chunks, allgather.is_combining
    (4, False)
    >>> load_collective("allreduce", ranks=4, chunks=2).chunk_factor
    2

    Notes
    -----
    A combining collective (allreduce, reduce, reducescatter) has several chunks per address: their
    values are summed.
    """
    from smtcoll import specs

    return specs.resolve_collective(_path(name_or_path, "collective"), ranks, root, chunks)


def load_schedule(path: str | os.PathLike[str]) -> Schedule:
    """A step schedule from a JSON file: smtcoll's own format, SCCL's ``*.msccl.json`` or TACCL's.

    Parameters
    ----------
    path : str or path
        The file.

    Returns
    -------
    Schedule
        The topology, the collective and the steps (each with its rounds and its sends).

    Examples
    --------
    >>> schedule = load_schedule("examples/allgather-ring4.json")
    >>> len(schedule.steps), schedule.rounds
    (2, 2)

    Notes
    -----
    Reading does not check the schedule: `verify` does.
    """
    from smtcoll.formats import load_schedule as load

    return load(_path(path, "path"))


def synthesize(topology: Topology | str, collective: Collective | str, *, steps: int | None = None,
               rounds: int | None = None, chunks: int = 1, max_steps: int | None = None,
               timeout: float | None = None, strategy: str | None = None, method: str = "auto",
               budget: int | None = None, max_chunks: int = 6, max_memory_mb: int | None = None,
               max_cells: int | None = None) -> SynthResult:
    """A schedule with the fewest steps (or with exactly `steps` steps, or the Pareto frontier), as
    ``smtcoll synth`` finds it: the same request gives the same result (`smtcoll.synth.door`).

    Parameters
    ----------
    topology : Topology or str
        Where the collective runs (`load_topology`, or a name or file it takes).
    collective : Collective or str
        What it must achieve (`load_collective`, with C = 1: `chunks` splits it; or a built-in name).
    steps : int, optional
        Look for a schedule of exactly this many steps (``synth --steps``) instead of the fewest.
    rounds : int, optional
        At most this many rounds in all (default: one round per step).
    chunks : int, default 1
        C, the split factor.
    max_steps : int, optional
        Give up above this many steps (default: lower bound + 2 * ranks).
    timeout : float, optional
        Wall-clock safety stop in seconds; when it stops the search, `status` is ``timeout`` with the best
        schedule known and `stopped_by` is ``time``.
    strategy : {"instance", "least-steps", "pareto"}, optional
        Default: ``instance`` when `steps` is given, else ``least-steps``.
    method : {"auto", "exact", "scale"}, default "auto"
        ``exact`` the SMT search, ``scale`` the large-instance engine, ``auto`` the engine and then the
        exact search where it can still improve on it.
    budget : int, optional
        The exact search's work budget in z3 resource units (deterministic; default 10^7; 0: none).
    max_chunks : int, default 6
        Pareto: the most chunks per input considered.
    max_memory_mb, max_cells : int, optional
        The memory cap and the largest ranks x chunks accepted (``--max-memory``, ``--max-cells``).

    Returns
    -------
    SynthResult
        `status` (``found``, ``infeasible``, ``timeout``), the `schedule`, the lower bounds and why the
        schedule is optimal; ``to_json()`` is the JSON of ``smtcoll synth --format json``.

    Examples
    --------
    >>> ring, allgather = load_topology("ring:4"), load_collective("allgather", ranks=4)
    >>> result = synthesize(ring, allgather)
    >>> result.status, len(result.schedule.steps), result.optimal.steps
    ('found', 2, 2)
    >>> synthesize(ring, allgather, steps=1).status
    'infeasible'

    Notes
    -----
    Every schedule returned has passed the independent checker. ``infeasible`` is a proof (within the
    bounds asked) that no schedule exists; ``smtcoll synth --prove`` writes it as re-checkable certificates.
    A request the command line would refuse raises the same error here (`smtcoll.UsageError`,
    `smtcoll.ModelError`, `smtcoll.TooLarge`: ``chunks=10**9``, ``steps=-1``, ``timeout=nan``, a
    collective of another rank count), before any work.
    """
    from smtcoll import limits
    from smtcoll.model import Collective as CollectiveType
    from smtcoll.model import Topology as TopologyType
    from smtcoll.synth.door import synthesize as answer
    from smtcoll.synth.request import Limits, SynthRequest

    request = SynthRequest(strategy=strategy, method=method, steps=steps, rounds=rounds,  # type: ignore[arg-type]
                           chunks=chunks, max_steps=max_steps, max_chunks=max_chunks,
                           limits=Limits(timeout, budget, max_memory_mb,
                                         limits.MAX_CELLS if max_cells is None else max_cells))
    with limits.cell_limit(request.limits.max_cells):  # a collective given by name is bounded while built
        topo = topology if isinstance(topology, TopologyType) else load_topology(topology)
        coll = collective if isinstance(collective, CollectiveType) else load_collective(collective, topo.ranks)
    return answer(topo, coll, request)


def lower_bounds(topology: Topology | str, collective: Collective | str) -> Bounds:
    """Lower bounds on steps and rounds, each with a witness anyone can check.

    Parameters
    ----------
    topology : Topology or str
        A Topology, or a name or ``.toml`` path for `load_topology`.
    collective : Collective or str
        With the split factor C the bounds are for (`load_collective(..., chunks=C)`); a name or ``.toml``
        path is loaded for the topology's ranks.

    Returns
    -------
    Bounds
        `steps` and `rounds` (the best bounds), and the bounds they come from (`receive`, `cut`, `lp`),
        each a `Bound` with its `value`, `why` and `witness`.

    Examples
    --------
    >>> b = lower_bounds(load_topology("ring:8"), load_collective("allgather", ranks=8))
    >>> b.steps.value, b.rounds.value
    (4, 4)

    Notes
    -----
    No solver is involved: distances, cuts and a linear program (scipy's HiGHS).
    """
    from smtcoll.bounds import lower_bounds as compute

    topo = load_topology(topology) if isinstance(topology, str | os.PathLike) else _instance(topology, "Topology",
                                                                                             "topology")
    coll = (load_collective(collective, topo.ranks) if isinstance(collective, str | os.PathLike)
            else _instance(collective, "Collective", "collective"))
    return compute(topo, coll)


def lower_to_xml(schedule: Schedule, output: str | os.PathLike[str] | None = None, *, instances: int = 1,
                 protocol: str = "Simple", runtime: str = "auto", mode: str = "outofplace") -> str:
    """The MSCCL XML program of a step schedule, verified by the independent checker.

    Parameters
    ----------
    schedule : Schedule
        A schedule the checker accepts (from `synthesize` or `load_schedule`).
    output : str or path, optional
        Also write the program there (atomically).
    instances : int, default 1
        Replicate the algorithm over this many channels.
    protocol : {"Simple", "LL", "LL128"}
    runtime : {"auto", "both", "executor", "legacy"}
        The runtimes the file is for; ``auto``: both when the collective allows it.
    mode : {"outofplace", "inplace", "both"}

    Returns
    -------
    str
        The XML text.

    Examples
    --------
    >>> xml = lower_to_xml(load_schedule("examples/allgather-ring4.json"))
    >>> xml.splitlines()[0].startswith('<algo name="allgather_on_ring4')
    True

    Notes
    -----
    Raises `smtcoll.NotVerified` when the program fails the checker (then nothing is written),
    `RejectedSchedule` when the checker rejects the schedule, `CannotLower` when no runtime can express it.
    """
    import tempfile
    from pathlib import Path

    from smtcoll.lower import LowerOptions, lower_to_file

    _instance(schedule, "Schedule", "schedule")
    output = None if output is None else _path(output, "output")
    options = LowerOptions(instances=instances, protocol=protocol, runtime=runtime, mode=mode)
    if output is not None:
        lower_to_file(schedule, Path(output), options)
        return Path(output).read_text()
    with tempfile.TemporaryDirectory(prefix="smtcoll-") as tmp:
        path = Path(tmp) / "algo.xml"
        lower_to_file(schedule, path, options)
        return path.read_text()


def verify(path: str | os.PathLike[str], *, runtime: str = "auto", collective: str | os.PathLike[str] | None = None,
           root: int | None = None, topology: Topology | str | os.PathLike[str] | None = None) -> Report:
    """Check an MSCCL XML program or a step schedule (JSON) file, as ``smtcoll verify`` does.

    Parameters
    ----------
    path : str or path
        A ``.xml`` program or a ``.json`` schedule.
    runtime : {"auto", "both", "executor", "legacy"}
        The runtime that must accept the file (``any``, an alias of ``auto``, and ``both`` check both).
    collective : str, optional
        Check against this collective (a built-in name or a ``.toml`` spec) instead of the file's `coll`.
    root : int, optional
        Root rank of a rooted collective.
    topology : Topology or str, optional
        XML: map connections to its links and estimate the time; schedules: check them on it. A name
        (``"dgx1"``) or a ``.toml`` path is loaded as `load_topology` does.

    Returns
    -------
    Report
        `verdict` (``ok``, ``error``, ``unusable``), `violations` (each with a `code` of
        docs/verify.md and its place), `runtimes` (which runtime accepts the file) and `metrics`.

    Examples
    --------
    >>> verify("examples/allgather-ring4.xml").verdict
    'ok'
    >>> report = verify("examples/allgather-ring4-wrong.xml")
    >>> report.verdict, sorted({v.code for v in report.violations if v.severity == "error"})
    ('error', ['postcondition', 'race'])

    Notes
    -----
    Never raises for a bad file: an unreadable one gives the verdict ``unusable``. Bad arguments raise the
    errors the command line gives for the same options (`UsageError`, `ModelError`; exit code 2 there).
    """
    from smtcoll.check.door import check
    from smtcoll.check.request import CheckRequest
    from smtcoll.choices import checked_collective, checked_runtime
    from smtcoll.errors import UsageError
    from smtcoll.model import Topology as TopologyClass

    if not isinstance(path, str | os.PathLike):
        raise UsageError("path", f"expected a file path (str or os.PathLike), got {type(path).__name__}")
    checked = checked_runtime(runtime)
    if collective is not None and not isinstance(collective, str | os.PathLike):
        raise UsageError("collective", f"expected a built-in name or a .toml path, got {type(collective).__name__}")
    if collective is not None:
        checked_collective(os.fspath(collective), "collective")
    if root is not None and (not isinstance(root, int) or isinstance(root, bool) or root < 0):
        raise UsageError("root", f"expected a rank >= 0, got {root!r}")
    if isinstance(topology, str | os.PathLike):
        topology = load_topology(topology)
    elif topology is not None and not isinstance(topology, TopologyClass):
        raise UsageError("topology", f"expected a Topology, a name or a .toml path, got {type(topology).__name__}")
    return check(os.fspath(path), CheckRequest(runtime=checked, root=root, topology=topology,
                                               collective=None if collective is None else os.fspath(collective)))
