"""The one table of built-in collectives: everything smtcoll knows about a collective by its name.

A row holds the collective's definition (the expressions of its spec file, `specs/collectives/NAME.toml`),
the other names users give it, how each MSCCL runtime spells it in `<algo coll=...>`, how the MSCCL buffers
split it, whether it is rooted or combining, nccl-tests' bus-bandwidth factor and the family of the
throughput bound that applies. The library, the lowering's layout and runtimes, the checker's buffers and
postconditions, the sweep's bus bandwidth and the bounds read this table; nothing else names a collective.
A new collective is one row here plus its spec file (docs/architecture.md, "A new collective";
`tests/model/test_collectives.py` checks that the two agree).

This module sits at the bottom of the layers (it imports nothing of smtcoll) so that every layer may read it.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import attrs


def _share(n: int) -> Fraction:
    """(n-1)/n: every rank moves all but its own share (nccl-tests' allgather, reducescatter, alltoall)."""
    return Fraction(n - 1, n)


def _twice_share(n: int) -> Fraction:
    """2(n-1)/n: a reduce-scatter and an allgather (nccl-tests' allreduce)."""
    return Fraction(2 * (n - 1), n)


def _whole(n: int) -> Fraction:
    """1: the whole buffer crosses the busiest link (nccl-tests' broadcast and reduce)."""
    return Fraction(1)


@attrs.frozen
class CollectiveKind:
    """One built-in collective. With C the chunk factor and N the ranks, an MSCCL program of it has
    `nchunksperloop` = N*C when `per_rank_loop` (one share per rank) else C; its input buffer holds C/N chunks
    when `input_share` (a rank's own share), its output C/N when `output_share`, else both hold
    nchunksperloop chunks; the scratch buffer is the program's own (`<gpu s_chunks>`), never the collective's.
    """

    name: str  # smtcoll's name: `-c NAME`, the spec file specs/collectives/NAME.toml
    description: str
    # the spec file's expressions (docs/specs.md): `chunks` over ranks/root, the rest over rank/chunk too
    chunks: str
    pre: str
    post: str
    address: str
    rooted: bool
    combining: bool  # the postcondition is a sum: several chunks share an address
    executor: str | None  # `coll` in msccl-executor-nccl; None: that runtime has no such collective
    legacy: str | None  # `coll` in the legacy msccl runtime; None: likewise
    per_rank_loop: bool
    input_share: bool = False
    output_share: bool = False
    # nccl-tests' bus bandwidth factor (src/*.cu, `getBw`): what each rank's links carry relative to nBytes
    bus_factor: Callable[[int], Fraction] = attrs.field(default=_whole, eq=False)
    # the throughput cut bound (bounds/forest.py): "allgather" on the topology, "reducescatter" on its
    # reverse; None: no cut formula for this collective
    bound_family: str | None = None
    aliases: tuple[str, ...] = ()  # other spellings accepted for `-c` and in spec files

    @property
    def spellings(self) -> tuple[str, ...]:
        """Every `coll` value of an MSCCL program that means this collective."""
        return tuple(dict.fromkeys(s for s in (self.name, self.executor, self.legacy) if s))


TABLE: tuple[CollectiveKind, ...] = (
    CollectiveKind("broadcast", "the root's buffer reaches every rank",
                   "1", "rank == root", "true", "chunk", rooted=True, combining=False,
                   executor="broadcast", legacy="broadcast", per_rank_loop=False),
    CollectiveKind("reduce", "the sum of every rank's buffer reaches the root",
                   "ranks", "rank == chunk", "rank == root", "0", rooted=True, combining=True,
                   executor="reduce", legacy="reduce", per_rank_loop=False),
    CollectiveKind("scatter", "the root sends chunk r to rank r",
                   "ranks", "rank == root", "rank == chunk", "chunk", rooted=True, combining=False,
                   executor="scatter", legacy=None, per_rank_loop=True, output_share=True, bus_factor=_share),
    CollectiveKind("gather", "chunk r of rank r reaches the root",
                   "ranks", "rank == chunk", "rank == root", "chunk", rooted=True, combining=False,
                   executor="gather", legacy=None, per_rank_loop=True, input_share=True, bus_factor=_share),
    CollectiveKind("allgather", "every rank's chunk reaches every rank",
                   "ranks", "rank == chunk", "true", "chunk", rooted=False, combining=False,
                   executor="allgather", legacy="allgather", per_rank_loop=True, input_share=True,
                   bus_factor=_share, bound_family="allgather", aliases=("all-gather",)),
    CollectiveKind("alltoall", "chunk s*ranks+d goes from rank s to rank d",
                   "ranks * ranks", "rank == chunk // ranks", "rank == chunk % ranks", "chunk", rooted=False,
                   combining=False, executor="alltoall", legacy="alltoall", per_rank_loop=True, bus_factor=_share,
                   aliases=("all-to-all",)),
    CollectiveKind("reducescatter", "rank d ends with the sum over ranks of their chunk d",
                   "ranks * ranks", "rank == chunk // ranks", "rank == chunk % ranks", "chunk % ranks",
                   rooted=False, combining=True, executor="reducescatter", legacy="reduce_scatter",
                   per_rank_loop=True, output_share=True, bus_factor=_share, bound_family="reducescatter",
                   aliases=("reduce_scatter", "reduce-scatter")),
    CollectiveKind("allreduce", "every rank ends with the sum of every rank's buffer",
                   "ranks", "rank == chunk", "true", "0", rooted=False, combining=True,
                   executor="allreduce", legacy="allreduce", per_rank_loop=False, bus_factor=_twice_share,
                   aliases=("all-reduce",)),
)

BY_NAME: dict[str, CollectiveKind] = {k.name: k for k in TABLE}
NAMES: tuple[str, ...] = tuple(BY_NAME)
ALIASES: dict[str, str] = {a: k.name for k in TABLE for a in k.aliases}
_BY_SPELLING: dict[str, CollectiveKind] = {s: k for k in TABLE for s in k.spellings}


def get(name: str | None) -> CollectiveKind | None:
    """The row of smtcoll's name (exactly, as a `Collective` carries it); None for any other collective."""
    return BY_NAME.get(name) if name is not None else None


def lookup(name: str) -> CollectiveKind | None:
    """The row a user means by `name`: smtcoll's name or an alias, any case, spaces ignored."""
    key = name.strip().lower()
    return BY_NAME.get(ALIASES.get(key, key))


def by_spelling(coll: str | None) -> CollectiveKind | None:
    """The row of an MSCCL program's `coll` attribute (either runtime's spelling); None when unknown."""
    return _BY_SPELLING.get(coll) if coll is not None else None


def bus_factor(name: str | None, ranks: int) -> Fraction | None:
    """nccl-tests' bus bandwidth factor of a collective at `ranks` ranks; None for a collective not in the table."""
    kind = get(name)
    return None if kind is None else kind.bus_factor(ranks)
