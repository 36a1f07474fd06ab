"""`smtcoll list` and `smtcoll show`: the built-ins, and what a topology or collective holds."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from smtcoll import library, limits, specs
from smtcoll.cli.app import Format, app, print_json
from smtcoll.files import check_writable
from smtcoll.model import Collective, Topology

show_app = typer.Typer(help="Show a topology or a collective.", no_args_is_help=True)
app.add_typer(show_app, name="show")

SHOW_MAX = (1024, 1 << 16)  # ranks, links: the all-pair distances of the diameter take ~10 s at the limit
DRAW_MAX = (256, 4096)  # a layout beyond this is slow and unreadable
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="text for people, json for scripts")]


@app.command("list")
def list_builtins(fmt: FormatOpt = Format.text) -> None:
    """List the built-in topologies and collectives."""
    data = {
        "topologies": [{"name": g.split(",")[0], "description": g.split(", ", 1)[1]}
                       for g in library.GENERATORS.values()]
        + [{"name": k, "description": v} for k, v in library.MACHINES.items()],
        "collectives": [{"name": c.name, "rooted": c.rooted, "description": c.description}
                        for c in library.COLLECTIVES.values()],
        "spec_files": str(specs.spec_files_dir() or ""),
    }
    if fmt is Format.json:
        print_json(data)
        return
    typer.echo("Topologies (a name, or a spec file; machines take --nodes N where they have a NIC model):")
    for t in data["topologies"]:
        typer.echo(f"  {t['name']:<22} {t['description']}")
    typer.echo("Collectives (--chunks C splits every chunk in C; rooted ones take --root):")
    for c in data["collectives"]:
        typer.echo(f"  {c['name']:<22} {c['description']}{' (rooted)' if c['rooted'] else ''}")
    if data["spec_files"]:
        typer.echo(f"Spec files of the built-ins, to copy and edit: {data['spec_files']}")


def topology_summary(topo: Topology) -> dict[str, Any]:
    degree = [sum(topo.bandwidth(r, d) for d in topo.out_neighbors(r)) for r in range(topo.ranks)]
    return {
        "name": topo.name,
        "ranks": topo.ranks,
        "links": specs.topology_to_dict(topo)["links"],
        "switches": [{"name": g.name, "srcs": list(g.srcs), "dsts": list(g.dsts), "bandwidth": g.bandwidth}
                     for g in topo.switches],
        "nics": specs.topology_to_dict(topo).get("nics", []),
        "degree": {"min": min(degree), "max": max(degree)},
        "neighbors": {"min": min(len(topo.out_neighbors(r)) for r in range(topo.ranks)),
                      "max": max(len(topo.out_neighbors(r)) for r in range(topo.ranks))},
        "diameter": topo.diameter,
        "strongly_connected": topo.diameter is not None,
    }


@show_app.command("topology")
def show_topology(
    name: Annotated[str, typer.Argument(help="a built-in name (dgx1, ring:8, torus2d:4x4) or a .toml file")],
    nodes: Annotated[int, typer.Option(help="compose this many nodes through the NIC model", min=1)] = 1,
    draw: Annotated[Optional[Path], typer.Option(help="draw the graph to a .png or .svg file")] = None,
    max_ranks: Annotated[Optional[int], typer.Option("--max-ranks", help=f"refuse larger topologies (default "
                                                    f"{SHOW_MAX[0]}, {DRAW_MAX[0]} with --draw)", min=1)] = None,
    max_links: Annotated[Optional[int], typer.Option("--max-links", help=f"refuse topologies with more links "
                                                    f"(default {SHOW_MAX[1]}, {DRAW_MAX[1]} with --draw)",
                                                    min=1)] = None,
    fmt: FormatOpt = Format.text,
) -> None:
    """Ranks, links, bandwidths, switch groups and diameter of a topology."""
    topo = specs.resolve_topology(name, nodes)
    default = DRAW_MAX if draw is not None else SHOW_MAX
    limits.check_graph(topo.ranks, len(topo.links), max_ranks or default[0], max_links or default[1],
                       "drawing" if draw is not None else "show topology (all-pair distances)")
    if draw is not None:
        check_writable(draw)
        from smtcoll.drawing import draw_topology  # matplotlib is optional and slow to import

        draw_topology(topo, draw)
    info = topology_summary(topo)
    if fmt is Format.json:
        print_json(info)
        return
    typer.echo(f"topology {topo.name}: {topo.ranks} ranks, {len(topo.links)} directed links, "
               f"diameter {info['diameter'] if info['diameter'] is not None else 'infinite (not strongly connected)'}")
    typer.echo(f"bandwidth out of a rank (chunks per round): {info['degree']['min']}..{info['degree']['max']}; "
               f"neighbors: {info['neighbors']['min']}..{info['neighbors']['max']}")
    typer.echo("links (src -> dst: bandwidth):")
    for r in range(topo.ranks):
        outs = ", ".join(f"{d}x{topo.bandwidth(r, d)}" if topo.bandwidth(r, d) > 1 else str(d)
                         for d in topo.out_neighbors(r))
        typer.echo(f"  {r:>4} -> {outs}")
    if topo.switches:
        typer.echo(f"switch groups ({len(topo.switches)}):")
        for g in topo.switches:
            typer.echo(f"  {g.name or '-'}: {_ranks(g.srcs)} -> {_ranks(g.dsts)}, {g.bandwidth} per round")
    if topo.nics:
        typer.echo(f"NIC model ({len(topo.nics)} NICs, used with --nodes N):")
        for i, n in enumerate(topo.nics):
            typer.echo(f"  nic{i}: senders {_ranks(n.senders)}, receivers {_ranks(n.receivers)}, rail {n.rail}, "
                       f"bandwidth {n.bandwidth}" + (f", {n.gbps} GB/s" if n.gbps else ""))
    if draw is not None:
        typer.echo(f"drawing written to {draw}")


def _ranks(rs: tuple[int, ...]) -> str:
    rs = tuple(rs)
    if len(rs) > 2 and rs == tuple(range(rs[0], rs[-1] + 1)):
        return f"{rs[0]}..{rs[-1]}"
    return ",".join(map(str, rs))


def collective_summary(coll: Collective) -> dict[str, Any]:
    return {
        "name": coll.name,
        "ranks": coll.ranks,
        "chunks": coll.chunk_factor,  # C, as the --chunks option of every command
        "chunk_count": coll.chunks,
        "root": coll.root,
        "combining": coll.is_combining,
        "addresses": len(coll.addresses),
        "pre": {str(r): sorted(coll.pre_sets[r]) for r in range(coll.ranks)},
        "post": {str(r): sorted(coll.post_sets[r]) for r in range(coll.ranks)},
        "address": list(coll.address),
    }


@show_app.command("collective")
def show_collective(
    name: Annotated[str, typer.Argument(help="a built-in name (allgather, ...) or a .toml file")],
    ranks: Annotated[Optional[int], typer.Option("--ranks", "-n", help="number of ranks", min=1,
                                                 max=library.MAX_RANKS)] = None,
    root: Annotated[Optional[int], typer.Option(help="root rank of a rooted collective", min=0)] = None,
    chunks: Annotated[int, typer.Option(help="split every chunk in this many", min=1, max=64)] = 1,
    max_cells: Annotated[int, typer.Option("--max-cells", help="refuse collectives with more ranks x chunks",
                                           min=1)] = limits.MAX_CELLS,
    fmt: FormatOpt = Format.text,
) -> None:
    """Chunks, pre- and postconditions and addresses of a collective."""
    with limits.cell_limit(max_cells):
        coll = specs.resolve_collective(name, ranks, root, chunks)
        limits.check_cells(coll.name, coll.ranks, coll.chunks)  # also explicit pairs from a file
    info = collective_summary(coll)
    if fmt is Format.json:
        print_json(info)
        return
    kind = "combining (chunks sharing an address are summed)" if coll.is_combining else "non-combining"
    typer.echo(f"collective {coll.name} on {coll.ranks} ranks{f', root {coll.root}' if coll.root is not None else ''}:"
               f" {coll.chunks} chunks, {len(coll.addresses)} addresses, {kind}, chunk factor {coll.chunk_factor}")
    typer.echo(f"{'rank':>5}  {'holds at the start':<30} must hold at the end")
    for r in range(coll.ranks):
        typer.echo(f"{r:>5}  {_ranks(tuple(sorted(coll.pre_sets[r]))) or '-':<30} "
                   f"{_ranks(tuple(sorted(coll.post_sets[r]))) or '-'}")
