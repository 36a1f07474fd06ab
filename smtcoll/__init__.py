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
import tempfile
from pathlib import Path
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
    "NotVerified": "smtcoll.errors",
}

__all__ = ["__version__", "load_collective", "load_schedule", "load_topology", "lower_bounds", "lower_to_xml",
           "synthesize", "verify", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'smtcoll' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


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

    return specs.resolve_topology(os.fspath(name_or_path), nodes)


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

    return specs.resolve_collective(os.fspath(name_or_path), ranks, root, chunks)


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

    return load(os.fspath(path))


def synthesize(topology: Topology, collective: Collective, *, steps: int | None = None,
               rounds: int | None = None, chunks: int = 1, max_steps: int | None = None,
               timeout: float | None = None) -> SynthResult:
    """A schedule with the fewest steps (or with exactly `steps` steps), found with Z3.

    Parameters
    ----------
    topology : Topology
        Where the collective runs (`load_topology`).
    collective : Collective
        What it must achieve (`load_collective`, with C = 1: `chunks` splits it).
    steps : int, optional
        Look for a schedule of exactly this many steps (``synth --steps``) instead of the fewest.
    rounds : int, optional
        At most this many rounds in all (default: one round per step).
    chunks : int, default 1
        C, the split factor.
    max_steps : int, optional
        Give up above this many steps (default: lower bound + 2 * ranks).
    timeout : float, optional
        Time limit in seconds; when reached, `status` is ``timeout`` with the best schedule known.

    Returns
    -------
    SynthResult
        `status` (``found``, ``infeasible``, ``timeout``), the `schedule`, the lower bounds and why the
        schedule is optimal; ``to_json()`` is the JSON of ``smtcoll synth --format json``.

    Examples
    --------
    >>> ring, allgather = load_topology("ring:4"), load_collective("allgather", ranks=4)
    >>> result = synthesize(ring, allgather)
    >>> result.status, len(result.schedule.steps), result.optimal["steps"]
    ('found', 2, 2)
    >>> synthesize(ring, allgather, steps=1).status
    'infeasible'

    Notes
    -----
    Every schedule returned has passed the independent checker. ``infeasible`` is a proof (within the
    bounds asked) that no schedule exists; ``smtcoll synth --prove`` writes it as re-checkable certificates.
    """
    from smtcoll.synth import strategies

    if steps is not None:
        return strategies.instance(topology, collective, steps, rounds, chunks, timeout)
    return strategies.least_steps(topology, collective, rounds, chunks, max_steps, timeout)


def lower_bounds(topology: Topology, collective: Collective) -> Bounds:
    """Lower bounds on steps and rounds, each with a witness anyone can check.

    Parameters
    ----------
    topology : Topology
    collective : Collective
        With the split factor C the bounds are for (`load_collective(..., chunks=C)`).

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

    return compute(topology, collective)


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
    from smtcoll.lower import LowerOptions, lower_to_file

    options = LowerOptions(instances=instances, protocol=protocol, runtime=runtime, mode=mode)
    if output is not None:
        lower_to_file(schedule, Path(output), options)
        return Path(output).read_text()
    with tempfile.TemporaryDirectory(prefix="smtcoll-") as tmp:
        path = Path(tmp) / "algo.xml"
        lower_to_file(schedule, path, options)
        return path.read_text()


def verify(path: str | os.PathLike[str], *, runtime: str = "any", collective: str | None = None,
           root: int | None = None, topology: Topology | None = None) -> Report:
    """Check an MSCCL XML program or a step schedule (JSON) file, as ``smtcoll verify`` does.

    Parameters
    ----------
    path : str or path
        A ``.xml`` program or a ``.json`` schedule.
    runtime : {"any", "executor", "legacy"}
        The runtime that must accept the file.
    collective : str, optional
        Check against this collective (a built-in name or a ``.toml`` spec) instead of the file's `coll`.
    root : int, optional
        Root rank of a rooted collective.
    topology : Topology, optional
        XML: map connections to its links and estimate the time; schedules: check them on it.

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
    Never raises for a bad file: an unreadable one gives the verdict ``unusable``.
    """
    from smtcoll.check.door import check
    from smtcoll.check.request import CheckRequest

    return check(os.fspath(path), CheckRequest(runtime=runtime, collective=collective, root=root, topology=topology))
