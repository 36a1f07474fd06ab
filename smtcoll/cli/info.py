"""`smtcoll list` and `smtcoll show`: the built-ins, and what a topology or collective holds."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from smtcoll import library, limits, specs
from smtcoll.cli.app import Format, app, print_json
from smtcoll.cli.options import (
    ChunksOpt,
    DrawOpt,
    ForceOpt,
    FormatOpt,
    NodesOpt,
    RootOpt,
    refuse_overwrite,
)
from smtcoll.draw import need_matplotlib  # no matplotlib import until it is called
from smtcoll.model import Collective, Topology
from smtcoll.text import count

show_app = typer.Typer(help="Show a topology, a collective or a schedule.", no_args_is_help=True)
app.add_typer(show_app, name="show")

SHOW_MAX = (1024, 1 << 16)  # ranks, links: the all-pair distances of the diameter take ~10 s at the limit
DRAW_MAX = (256, 4096)  # a layout beyond this is slow and unreadable


@app.command("list")
def list_builtins(fmt: FormatOpt = Format.text) -> None:
    """List the built-in topologies and collectives."""
    topologies: list[dict[str, Any]] = [{"name": g.split(",")[0], "description": g.split(", ", 1)[1]}
                                        for g in library.GENERATORS.values()]
    topologies += [{"name": k, "description": v} for k, v in library.MACHINES.items()]
    collectives: list[dict[str, Any]] = [{"name": c.name, "rooted": c.rooted, "description": c.description}
                                         for c in library.COLLECTIVES.values()]
    spec_files = str(specs.spec_files_dir() or "")
    if fmt is Format.json:
        print_json({"topologies": topologies, "collectives": collectives, "spec_files": spec_files})
        return
    typer.echo("Topologies (a name, or a spec file; machines take --nodes N where they have a NIC model):")
    for t in topologies:
        typer.echo(f"  {t['name']:<22} {t['description']}")
    typer.echo("Collectives (--chunks C splits every chunk in C; rooted ones take --root):")
    for c in collectives:
        typer.echo(f"  {c['name']:<22} {c['description']}{' (rooted)' if c['rooted'] else ''}")
    if spec_files:
        typer.echo(f"Spec files of the built-ins, to copy and edit: {spec_files}")


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
    name: Annotated[str, typer.Argument(metavar="NAME|FILE",
                                        help="a built-in name (dgx1, ring:8, torus2d:4x4) or a .toml file")],
    nodes: NodesOpt = 1,
    draw: DrawOpt = None,
    force: ForceOpt = False,
    max_ranks: Annotated[int | None, typer.Option("--max-ranks", metavar="N", help=f"refuse larger topologies "
                                                    f"(default {SHOW_MAX[0]}, {DRAW_MAX[0]} with --draw)",
                                                    min=1)] = None,
    max_links: Annotated[int | None, typer.Option("--max-links", metavar="N", help=f"refuse topologies with more "
                                                    f"links (default {SHOW_MAX[1]}, {DRAW_MAX[1]} with --draw)",
                                                    min=1)] = None,
    fmt: FormatOpt = Format.text,
) -> None:
    """Ranks, links, bandwidths, switch groups and diameter of a topology."""
    refuse_overwrite(force, draw)
    topo = specs.resolve_topology(name, nodes)
    default = DRAW_MAX if draw is not None else SHOW_MAX
    limits.check_graph(topo.ranks, len(topo.links), max_ranks or default[0], max_links or default[1],
                       "drawing" if draw is not None else "show topology (all-pair distances)")
    if draw is not None:
        need_matplotlib("--draw", draw)
        from smtcoll.draw.topology import draw_topology  # matplotlib is optional and slow to import

        node = specs.resolve_topology(name, 1) if nodes > 1 else None
        draw_topology(topo, draw, node=node)
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
        typer.echo(f"NIC model ({count(len(topo.nics), 'NIC')}, used with --nodes N):")
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
    name: Annotated[str, typer.Argument(metavar="NAME|FILE", help="a built-in name (allgather, ...) or a .toml file")],
    ranks: Annotated[int | None, typer.Option("--ranks", "-n", metavar="N", help="number of ranks", min=1,
                                                 max=library.MAX_RANKS)] = None,
    root: RootOpt = None,
    chunks: ChunksOpt = 1,
    max_cells: Annotated[int, typer.Option("--max-cells", metavar="N", help="refuse collectives with more ranks x "
                                           "chunks", min=1)] = limits.MAX_CELLS,
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


@show_app.command("schedule")
def show_schedule(
    path: Annotated[Path, typer.Argument(metavar="FILE", help="a step schedule (smtcoll, SCCL or TACCL JSON)")],
    draw: DrawOpt = None,
    size: Annotated[int, typer.Option(metavar="BYTES", min=1, help="bytes of one rank's output buffer, for the "
                                                                   "timeline of --draw")] = 1 << 20,
    force: ForceOpt = False,
    fmt: FormatOpt = Format.text,
) -> None:
    """Per step, the sends on each link and how full the link is; --draw: link usage over steps and a
    timeline in the alpha-beta model."""
    from smtcoll.check.schedule import check_schedule
    from smtcoll.draw.schedule import schedule_table
    from smtcoll.formats import load_schedule

    refuse_overwrite(force, draw)
    schedule = load_schedule(path)
    verdict = check_schedule(schedule, str(path)).verdict
    data = {"file": str(path), **schedule_table(schedule), "verdict": verdict}
    if draw is not None:
        need_matplotlib("--draw", draw)
        from smtcoll.draw.schedule import draw_schedule

        draw_schedule(schedule, draw, size)
    if fmt is Format.json:
        print_json(data)
        return
    typer.echo(f"{path}: {schedule.name or 'schedule'}: {data['collective']} on {data['topology']}, "
               f"{count(data['steps'], 'step')}, {count(data['rounds'], 'round')}, "
               f"{count(data['chunks'], 'chunk')} per input, {count(data['sends'], 'send')}; checker: {verdict}")
    rows = [("step", "rounds", "link", "bw", "sends", "load", "chunks")]
    for st in data["per_step"]:
        for k, u in enumerate(st["links"] or [None]):
            first = (str(st["step"]), str(st["rounds"])) if k == 0 else ("", "")
            if u is None:
                rows.append((*first, "-", "", "0", "", ""))
                continue
            rows.append((*first, f"{u['src']}->{u['dst']}", str(u["bandwidth"]), str(u["sends"]),
                         f"{u['load']:.2f}", _ranks(tuple(u["chunks"]))))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        typer.echo("  " + "  ".join(c.rjust(w) if i in (0, 1, 3, 4, 5) else c.ljust(w)
                                   for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    if draw is not None:
        typer.echo(f"drawing written to {draw}")
