"""`smtcoll bounds`: lower bounds on steps, rounds and time, and the throughput bound, with witnesses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from smtcoll import limits, specs
from smtcoll.cli.app import Format, app, print_json
from smtcoll.cli.options import ChunksOpt, CollectiveOpt, FormatOpt, NodesOpt, RootOpt, TopologyOpt
from smtcoll.text import count, singular_unit

if TYPE_CHECKING:
    from smtcoll.bounds import Bound

MAX_RANKS = 256  # measured: Ring(256) Allgather 12 s of CPU, Ring(512) 73 s and 2.6 GB (the flow LP)
MAX_LINKS = 1 << 16


@app.command("bounds")
def bounds_command(
    topology: TopologyOpt,
    collective: CollectiveOpt,
    root: RootOpt = None,
    chunks: ChunksOpt = 1,
    nodes: NodesOpt = 1,
    size: Annotated[int | None, typer.Option(metavar="BYTES",
                                                help="bytes of one rank's output buffer, for the time bound",
                                                min=1)] = None,
    gbps_per_unit: Annotated[float | None, typer.Option(
        "--gbps-per-unit", metavar="GBPS",
        help="GB/s per unit of link bandwidth (overrides the topology's link speeds)",
        min=0.000001)] = None,
    alpha_us: Annotated[float | None, typer.Option("--alpha-us", metavar="US",
                                                      help="latency per step in microseconds "
                                                      "(overrides the topology's)", min=0.0)] = None,
    lp: Annotated[bool, typer.Option("--lp/--no-lp", metavar="", help="solve the multi-commodity flow LP")] = True,
    max_ranks: Annotated[int, typer.Option("--max-ranks", metavar="N", help="refuse larger topologies (the bounds take "
                                           "about 12 s of CPU at 256 ranks)", min=1)] = MAX_RANKS,
    max_links: Annotated[int, typer.Option("--max-links", metavar="N", help="refuse topologies with more links", min=1)]
    = MAX_LINKS,
    max_cells: Annotated[int, typer.Option("--max-cells", metavar="N",
                                           help="refuse collectives with more ranks x chunks",
                                           min=1)] = limits.MAX_CELLS,
    fmt: FormatOpt = Format.text,
) -> None:
    """Lower bounds for a collective on a topology, each with a witness you can check by hand."""
    topo = specs.resolve_topology(topology, nodes)
    limits.check_graph(topo.ranks, len(topo.links), max_ranks, max_links, "bounds")
    with limits.cell_limit(max_cells):
        coll = specs.resolve_collective(collective, topo.ranks, root, chunks)
        limits.check_cells(coll.name, coll.ranks, coll.chunks)
    from smtcoll.bounds import lower_bounds  # networkx and scipy: only when this command runs

    result = lower_bounds(topo, coll, size, gbps_per_unit, alpha_us, lp)
    if fmt is Format.json:
        print_json(result.to_json())
        return
    typer.echo(f"bounds for {coll.name} on {topo.name} ({topo.ranks} ranks, C={coll.chunk_factor}):")
    rows = [(b.name + ":", _value(b), _explain(b)) for b in (
        result.steps, result.rounds, result.receive, result.cut, result.lp, result.rounds_per_chunk, result.throughput,
        result.time)]
    # fixed-width columns as wide as their longest entry: aligned whatever the terminal width
    w0, w1 = (max(len(r[i]) for r in rows) for i in (0, 1))
    for name, value, why in rows:
        typer.echo(f"  {name:<{w0}}  {value:<{w1}}  {why}".rstrip())


def _value(b: Bound) -> str:
    if b.value is None:
        return "-"
    prefix = "<= " if b.name == "throughput" else ">= "
    return f"{prefix}{b.value} {singular_unit(b.value, b.unit)}"


def _explain(b: Bound) -> str:
    w: dict[str, Any] = b.witness
    if b.value is None:
        return b.note
    if b.name == "steps" and w:
        return (f"chunk {w['chunk']} starts at {_ranks(w['holders'])}; rank {w['rank']} needs it, "
                f"{count(w['distance'], 'hop')} away (path {'->'.join(map(str, w['shortest_path']))})")
    if b.name == "receive" and w:
        return (f"rank {w['rank']} must receive {count(w['must_receive'], 'chunk')}; at most {w['capacity']} enter it "
                "per round")
    if b.name == "cut" and w:
        return (f"{count(w['must_enter'], 'chunk')} must enter {_ranks(w['inside'])}; at most {w['capacity']} "
                "enter per round")
    if b.name == "lp" and w:
        return f"multi-commodity flow LP optimum {w['lp_optimum']}"
    if b.name in ("rounds", "rounds_per_chunk"):
        return f"from the {w['from']} bound" + (f" ({w['exact']})" if "exact" in w else "")
    if b.name == "throughput":
        return (f"{_ranks(w['sending_side'])} must send out {count(w['shares_that_must_leave'], 'share')} through "
                f"{w['capacity_out']} {w['unit']}: N * {w['capacity_out']} / {w['shares_that_must_leave']}")
    if b.name == "time":
        return (f"{w['steps']} x {w['alpha_us']} us + {count(w['rounds'], 'round')} x {w['round_us']} us "
                f"({w['chunk_bytes']} B per chunk at {w['gbps_per_unit']} GB/s)")
    return b.note


def _ranks(ranks: list[int]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + _short(ranks)


def _short(ranks: list[int]) -> str:
    rs = list(ranks)
    if len(rs) > 2 and rs == list(range(rs[0], rs[-1] + 1)):
        return f"{rs[0]}..{rs[-1]}"
    if len(rs) > 12:
        return ",".join(map(str, rs[:12])) + f",... ({len(rs)} ranks)"
    return ",".join(map(str, rs))


