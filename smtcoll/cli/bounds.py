"""`smtcoll bounds`: lower bounds on steps, rounds and time, and the throughput bound, with witnesses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from smtcoll import limits, specs
from smtcoll.cli.app import Format, app, print_json

if TYPE_CHECKING:
    from smtcoll.bounds import Bound

MAX_RANKS = 256  # measured: Ring(256) Allgather 12 s of CPU, Ring(512) 73 s and 2.6 GB (the flow LP)
MAX_LINKS = 1 << 16
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="text for people, json for scripts")]


@app.command("bounds")
def bounds_command(
    topology: Annotated[str, typer.Option("--topology", "-t", help="a built-in name (dgx1, ring:8) or a .toml file")],
    collective: Annotated[str, typer.Option("--collective", "-c", help="a built-in name (allgather) or a .toml file")],
    root: Annotated[Optional[int], typer.Option(help="root rank of a rooted collective", min=0)] = None,
    chunks: Annotated[int, typer.Option(help="C: split every chunk in this many", min=1, max=64)] = 1,
    nodes: Annotated[int, typer.Option(help="compose this many nodes through the NIC model", min=1)] = 1,
    size: Annotated[Optional[int], typer.Option(help="bytes of one rank's output buffer, for the time bound",
                                                min=1)] = None,
    gbps_per_unit: Annotated[Optional[float], typer.Option(
        "--gbps-per-unit", help="GB/s per unit of link bandwidth (overrides the topology's link speeds)",
        min=0.000001)] = None,
    alpha_us: Annotated[Optional[float], typer.Option("--alpha-us", help="latency per step in microseconds "
                                                      "(overrides the topology's)", min=0.0)] = None,
    lp: Annotated[bool, typer.Option("--lp/--no-lp", help="solve the multi-commodity flow LP")] = True,
    max_ranks: Annotated[int, typer.Option("--max-ranks", help="refuse larger topologies (the bounds take "
                                           "about 12 s of CPU at 256 ranks)", min=1)] = MAX_RANKS,
    max_links: Annotated[int, typer.Option("--max-links", help="refuse topologies with more links", min=1)]
    = MAX_LINKS,
    max_cells: Annotated[int, typer.Option("--max-cells", help="refuse collectives with more ranks x chunks",
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
    for b in (result.steps, result.rounds, result.receive, result.cut, result.lp, result.rounds_per_chunk,
              result.throughput, result.time):
        typer.echo(f"  {b.name + ':':<18} {_value(b):<28} {_explain(b)}")


def _value(b: Bound) -> str:
    if b.value is None:
        return "-"
    prefix = "<= " if b.name == "throughput" else ">= "
    return f"{prefix}{b.value} {b.unit}"


def _explain(b: Bound) -> str:
    w: dict[str, Any] = b.witness
    if b.value is None:
        return b.note
    if b.name == "steps" and w:
        return (f"chunk {w['chunk']} starts at rank(s) {_short(w['holders'])}; rank {w['rank']} needs it, "
                f"{w['distance']} hop(s) away (path {'->'.join(map(str, w['shortest_path']))})")
    if b.name == "receive" and w:
        return (f"rank {w['rank']} must receive {w['must_receive']} chunk(s); at most {w['capacity']} enter it "
                "per round")
    if b.name == "cut" and w:
        return (f"{w['must_enter']} chunk(s) must enter ranks {_short(w['inside'])}; at most {w['capacity']} "
                "enter per round")
    if b.name == "lp" and w:
        return f"multi-commodity flow LP optimum {w['lp_optimum']}"
    if b.name in ("rounds", "rounds_per_chunk"):
        return f"from the {w['from']} bound" + (f" ({w['exact']})" if "exact" in w else "")
    if b.name == "throughput":
        return (f"ranks {_short(w['sending_side'])} must send out {w['shares_that_must_leave']} share(s) through "
                f"{w['capacity_out']} {w['unit']}: N * {w['capacity_out']} / {w['shares_that_must_leave']}")
    if b.name == "time":
        return (f"{w['steps']} x {w['alpha_us']} us + {w['rounds']} round(s) x {w['round_us']} us "
                f"({w['chunk_bytes']} B per chunk at {w['gbps_per_unit']} GB/s)")
    return b.note


def _short(ranks: list[int]) -> str:
    rs = list(ranks)
    if len(rs) > 2 and rs == list(range(rs[0], rs[-1] + 1)):
        return f"{rs[0]}..{rs[-1]}"
    if len(rs) > 12:
        return ",".join(map(str, rs[:12])) + f",... ({len(rs)} ranks)"
    return ",".join(map(str, rs))


