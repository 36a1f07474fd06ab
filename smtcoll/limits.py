"""Work bounds that hold for every input: sizes refused before any work, and the memory cap.

Each limit has a command-line option that raises it (docs/synth.md, "Limits"):

- `--max-cells` (show collective, bounds, synth): ranks x chunks of a collective generated from
  expressions; every cell evaluates the pre- and postcondition (about 5 us each, so the default of 2^20
  takes about 5 s);
- `--max-ranks`, `--max-links` (show topology, bounds): the graph algorithms (all-pair distances, the
  flow LP of bounds, the layout of --draw) grow with ranks x (ranks + links);
- `--max-memory` (synth): the memory cap in MB. An instance whose encoding is estimated not to fit is not
  encoded; z3 stops at the cap (its `memory_max_size`), and the address space is capped (RLIMIT_AS) a
  little above it, so that an allocation fails with a clear error instead of the kernel killing the process.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
from collections.abc import Iterator

from smtcoll.errors import TooLarge, UsageError
from smtcoll.text import count

MAX_CELLS = 1 << 20
MAX_CHUNKS = 1 << 16  # chunks of one synthesis instance (after the split)
MAX_ROUNDS = 1 << 12  # rounds of one synthesis instance
MAX_JOBS = 64  # worker processes of verify --jobs (and never more than 4 x the cores)

_cells: contextvars.ContextVar[int] = contextvars.ContextVar("max_cells", default=MAX_CELLS)


@contextlib.contextmanager
def cell_limit(max_cells: int) -> Iterator[None]:
    """Within the block, collectives with more than `max_cells` rank x chunk cells are refused."""
    token = _cells.set(max_cells)
    try:
        yield
    finally:
        _cells.reset(token)


def check_cells(name: str, ranks: int, chunks: int, factor: int = 1) -> None:
    """Refuse a collective of `ranks` x `chunks` (x `factor` after the split) cells above the limit."""
    limit = _cells.get()
    cells = ranks * chunks * factor
    if cells > limit:
        raise TooLarge("collective", f"{name} on {ranks} ranks has {chunks * factor} chunks: {cells} rank x chunk "
                                     f"cells, more than the limit of {limit}", "--max-cells")


# Transfers of a timed schedule (transfer logs, TE-CCL flows, TACCL sends, ForestColl chunk moves): the
# timed checker's work and memory grow with them (about 60 CPU us and 1.7 KB each, docs/benchmarks.md), so
# a file with more is refused before they are built. `verify --max-pieces` sets it, as it does the chunk
# pieces an XML program moves.
MAX_TIMED_TRANSFERS = 200_000
_transfers: contextvars.ContextVar[int] = contextvars.ContextVar("max_transfers", default=MAX_TIMED_TRANSFERS)


@contextlib.contextmanager
def transfer_limit(max_transfers: int) -> Iterator[None]:
    token = _transfers.set(max_transfers)
    try:
        yield
    finally:
        _transfers.reset(token)


def max_transfers() -> int:
    return _transfers.get()


def transfers_exceeded(n: int | str) -> str:
    """The message of a timed schedule over the limit (the reader adds its place)."""
    limit = _transfers.get()
    return (f"{n} transfers: over the --max-pieces limit of {limit} transfers of a timed schedule; if the file "
            "is genuine, raise it (smtcoll verify --max-pieces N)")


def check_graph(ranks: int, links: int, max_ranks: int, max_links: int, what: str) -> None:
    """Refuse a topology larger than the limits of a command (`what` names the work, e.g. `bounds`)."""
    if ranks > max_ranks:
        raise TooLarge("topology", f"{ranks} ranks: {what} is limited to {max_ranks} ranks", "--max-ranks")
    if links > max_links:
        raise TooLarge("topology", f"{links} links: {what} is limited to {max_links} links", "--max-links")


MIN_TIMEOUT_S = 0.001
MAX_TIMEOUT_S = 7 * 24 * 3600.0  # beyond this a deadline overflows some timer (asyncio, z3's milliseconds)


def timeout_problem(timeout: object) -> str | None:
    """The one message for a time limit out of range (0, NaN, infinity, 1e9, not a number), else None."""
    ok = (isinstance(timeout, int | float) and not isinstance(timeout, bool) and math.isfinite(timeout)
          and MIN_TIMEOUT_S <= timeout <= MAX_TIMEOUT_S)
    if ok:
        return None
    return f"must be a number of seconds from {MIN_TIMEOUT_S:g} to {MAX_TIMEOUT_S:.0f} (7 days), got {timeout}"


def check_timeout(timeout: float | None, option: str = "--timeout") -> None:
    """A time limit: a finite number of seconds in MIN_TIMEOUT_S..MAX_TIMEOUT_S (the command line and the API)."""
    problem = None if timeout is None else timeout_problem(timeout)
    if problem:
        raise UsageError(option, problem)


MAX_NODES = 64  # nodes a topology is composed into (--nodes; sweep's node counts)


def nodes_problem(nodes: object) -> str | None:
    if isinstance(nodes, int) and not isinstance(nodes, bool) and 1 <= nodes <= MAX_NODES:
        return None
    return f"must be a whole number from 1 to {MAX_NODES}, got {nodes}"


def check_jobs(jobs: int | None) -> None:
    cap = min(MAX_JOBS, 4 * (os.cpu_count() or 1))
    if jobs is not None and not 1 <= jobs <= cap:
        raise UsageError("--jobs", f"must be between 1 and {cap} (4 x the {count(os.cpu_count() or 1, 'core')}, "
                                   f"at most {MAX_JOBS}), got {jobs}")


def default_memory_mb() -> int:
    """3/4 of the physical memory, at most 4096 MB."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20)
    except (ValueError, OSError, AttributeError):
        return 4096
    return max(256, min(4096, total * 3 // 4))


# Measured: the encoding of DGX-1 Allgather (4 steps, 10 rounds, 8 chunks; 10^4 variables) peaks at 135 MB
# of which ~80 MB is the interpreter, z3 and the model; the solver's learned clauses grow with the search,
# so the estimate is generous: refusing a fitting instance costs less than a process the kernel kills.
BYTES_PER_VARIABLE = 4096
BASE_MB = 100


def encoding_variables(steps: int, rounds: int, ranks: int, links: int, chunks: int, addresses: int,
                       combining: bool = False) -> int:
    """An upper estimate of the Boolean variables of an encoding (sends, holdings, extra-round literals). A
    combining collective also has, per step, a literal per contribution a link carries and one per contribution
    a rank keeps (synth/exact/encoding.py `_combine_step`): links x chunks more, the largest term (a 16-rank
    switch's Allreduce at 8 chunks: 8x the other terms, 1.4 GB where they said 230 MB)."""
    per_step = links * addresses + ranks * chunks
    if combining:
        per_step += links * chunks + ranks * chunks
    return steps * (per_step + max(0, rounds - steps))


def encoding_fits(variables: int, max_memory_mb: int) -> bool:
    return BASE_MB + variables * BYTES_PER_VARIABLE / (1 << 20) <= max_memory_mb


APPLY_RLIMIT = False  # set by the command-line entry point only: never cap a process that imports smtcoll


def cap_memory(max_memory_mb: int) -> None:
    """Cap the address space a little above `max_memory_mb` (the interpreter and z3 map ~0.5 GB of libraries
    and arenas they never touch). z3's own cap (`memory_max_size`) is set by the synthesizer."""
    if not APPLY_RLIMIT:
        return
    try:
        import resource

        limit = (max_memory_mb + 1024) << 20
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        if soft == resource.RLIM_INFINITY or soft > limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, ValueError, OSError):
        pass  # no rlimit on this platform: the encoding estimate and z3's own cap still apply
