"""`smtcoll bounds`: lower bounds on steps, rounds and time, and the throughput bound, with witnesses."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from smtcoll import limits, specs
from smtcoll.cli.app import Format, app, print_json
from smtcoll.cli.options import ChunksOpt, CollectiveOpt, FormatOpt, NodesOpt, RootOpt, TopologyOpt
from smtcoll.errors import ModelError
from smtcoll.text import count, singular_unit

if TYPE_CHECKING:
    from smtcoll.bounds import Bound
    from smtcoll.bounds.throughput import TimeBound
    from smtcoll.model import Collective, Topology

MAX_RANKS = 256  # measured: Ring(256) Allgather 12 s of CPU, Ring(512) 73 s and 2.6 GB (the flow LP)
MAX_LINKS = 1 << 16


@app.command("bounds")
def bounds_command(
    topology: TopologyOpt,
    collective: CollectiveOpt,
    root: RootOpt = None,
    chunks: ChunksOpt = 1,
    nodes: NodesOpt = 1,
    size: Annotated[str | None, typer.Option(metavar="SIZE",
                                                help="buffer size (the runtime's nBytes, e.g. 1GiB): the time "
                                                "and bus bandwidth bounds at that size")] = None,
    gbps_per_unit: Annotated[float | None, typer.Option(
        "--gbps-per-unit", metavar="GBPS",
        help="GB/s per unit of link bandwidth: overrides the link speeds in the step-synchronous time bound; "
        "the throughput bound uses it only for links without a speed (default 25)",
        min=0.000001)] = None,
    certificate: Annotated[Path | None, typer.Option(
        "--certificate", metavar="DIR", help="write the throughput bound's certificate into DIR (re-check it "
        "with `smtcoll proof check`)")] = None,
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
    from smtcoll.bounds.throughput import DEFAULT_GBPS_PER_UNIT, addresses, time_bound
    from smtcoll.sweep.sizes import parse_size

    nbytes = None if size is None else parse_size(size, "--size")
    if nbytes is not None and nbytes < 1:
        raise ModelError("--size", "must be at least 1 byte")
    # the step-synchronous bound counts chunks of size / (addresses of the largest output): the same chunk
    out_addrs = max(len({coll.address[c] for c in s}) for s in coll.post_sets)
    sync_size = None if nbytes is None else max(1, nbytes * out_addrs // addresses(coll))
    result = lower_bounds(topo, coll, sync_size, gbps_per_unit, alpha_us, lp)
    tb = time_bound(topo, coll, gbps_per_unit or DEFAULT_GBPS_PER_UNIT, alpha_us, lp=lp)
    cert_path = rounds_cert = None
    if certificate is not None:
        from smtcoll.proofs.throughput import write_throughput_certificate

        cert_path = write_throughput_certificate(topo, coll, certificate,
                                                 gbps_per_unit=gbps_per_unit or DEFAULT_GBPS_PER_UNIT)
        rounds_cert = _rounds_certificate(topo, coll, result.rounds.value, certificate)
    if fmt is Format.json:
        out = result.to_json()
        out["time_bound"] = tb.to_json(nbytes)
        if cert_path is not None:
            out["time_bound"]["certificate_file"] = str(cert_path)
        if rounds_cert is not None:
            out["rounds"]["certificate_file"] = str(rounds_cert)
        print_json(out)
        return
    typer.echo(f"bounds for {coll.name} on {topo.name} ({topo.ranks} ranks, C={coll.chunk_factor}):")
    rows = [(b.name + ":", _value(b), _explain(b)) for b in (
        result.steps, result.rounds, result.receive, result.cut, result.lp,
        *([result.holdings] if result.holdings else []),
        *([result.setcut] if result.setcut is not None and result.setcut.value is not None else []),
        result.rounds_per_chunk, result.throughput, result.time)]
    rows += _time_bound_rows(tb, nbytes)
    # fixed-width columns as wide as their longest entry: aligned whatever the terminal width
    w0, w1 = (max(len(r[i]) for r in rows) for i in (0, 1))
    for name, value, why in rows:
        typer.echo(f"  {name:<{w0}}  {value:<{w1}}  {why}".rstrip())
    if cert_path is not None:
        typer.echo(f"certificate written: {cert_path} (re-check: smtcoll proof check {cert_path})")
    if rounds_cert is not None:
        typer.echo(f"certificate written: {rounds_cert} (the rounds bound; re-check: smtcoll proof check "
                   f"{rounds_cert})")


def _rounds_certificate(topo: Topology, coll: Collective, rounds: int | float | None, out: Path) -> Path | None:
    """A certificate that no schedule finishes in fewer rounds than the rounds bound, when a bound with a
    re-checkable witness (steps, receive, cut, holdings, relay, cycle, reach, inflow, ports, rails, hubs, summed,
    setcut) proves it; None otherwise (the LP, the entry bound: no certificate kind yet). Never runs a solver."""
    from smtcoll.proofs.certificate import refuting_bound, write_certificate
    from smtcoll.proofs.claim import Claim

    if rounds is None or rounds < 1:
        return None
    claim = Claim(rounds=int(rounds) - 1)
    if refuting_bound(claim, topo, coll) is None:
        return None
    return write_certificate(claim, topo, coll, out)


def _time_bound_rows(tb: TimeBound, nbytes: int | None) -> list[tuple[str, str, str]]:
    """The physical time bound (links at their own GB/s, running at once): T(B) >= max(latency, x B)."""
    if not tb.us_per_byte:
        return [("bus_bandwidth:", "-", tb.witness)]
    bw = 1 / tb.us_per_byte / 1000
    rows = [("bus_bandwidth:", f"<= {float(bw * tb.bus_factor):.6g} GB/s",
             f"T(B) >= {tb.us_per_byte} us/byte x B, {float(bw):.6g} GB/s algorithm bandwidth; {tb.witness}"),
            ("latency:", f">= {float(tb.latency_us):g} us", f"{count(tb.steps, 'step')} x {float(tb.alpha_us):g} us")]
    if nbytes is not None:
        bus = tb.busbw_gbps(nbytes)
        rows.append(("time_at_size:", f">= {float(tb.at(nbytes)):.6g} us",
                     f"{nbytes} bytes: max(latency, us/byte x B); bus bandwidth <= "
                     f"{'-' if bus is None else f'{float(bus):.6g}'} GB/s"))
    return rows


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
    if b.name == "lp" and w and str(w.get("solver", "")).startswith("none"):
        how = ("trees for the chunks take" if "tree" in str(w["solver"]) else  # bounds.tree_route (multicast)
               "a routing along shortest paths takes")
        return f"multi-commodity flow LP optimum {w['lp_optimum']}: {how} as long as a cut proves (no LP solved)"
    if b.name == "lp" and w:
        return f"multi-commodity flow LP optimum {w['lp_optimum']}"
    if b.name == "holdings" and w:
        from smtcoll.bounds import explain

        return explain(b).removeprefix("holdings: ")
    if b.name == "setcut" and w:
        from smtcoll.bounds.setcut import explain_setcut

        return explain_setcut(w)
    if b.name == "rounds" and "entry" in w:
        e = w["entry"]
        last = f", then {count(e['hops'], 'hop')} to rank {e['farthest']}" if e["hops"] else ""
        return (f"from the entry bound: {count(e['must_enter'], 'chunk')} must enter node {e['node']}, at most "
                f"{e['capacity']} per round{last}")
    if b.name == "rounds" and "relay" in w:
        from smtcoll.bounds import Bound, explain

        return "from the " + explain(Bound("relay", b.value, "rounds", w["relay"])).replace(": ", " bound: ", 1)
    if b.name == "rounds" and "cycle" in w:
        from smtcoll.bounds import Bound, explain

        return "from the odd-" + explain(Bound("cycle", b.value, "rounds", w["cycle"])).replace(": ", " bound: ", 1)
    if b.name == "rounds" and "reach" in w:
        from smtcoll.bounds import Bound, explain

        return "from the " + explain(Bound("reach", b.value, "rounds", w["reach"])).replace(": ", " bound: ", 1)
    if b.name == "rounds" and "inflow" in w:
        from smtcoll.bounds import Bound, explain

        return "from the " + explain(Bound("inflow", b.value, "rounds", w["inflow"])).replace(": ", " bound: ", 1)
    if b.name == "rounds" and "ports" in w:
        from smtcoll.bounds import Bound, explain

        return "from the " + explain(Bound("ports", b.value, "rounds", w["ports"])).replace(": ", " bound: ", 1)
    if b.name == "rounds" and "rails" in w:
        from smtcoll.bounds import Bound, explain

        return "from the " + explain(Bound("rails", b.value, "rounds", w["rails"])).replace(": ", " bound: ", 1)
    if b.name == "rounds" and "hubs" in w:
        from smtcoll.bounds import Bound, explain

        return "from the " + explain(Bound("hubs", b.value, "rounds", w["hubs"])).replace(": ", " bound: ", 1)
    if b.name == "rounds" and "summed" in w:
        from smtcoll.bounds import Bound, explain

        return "from the " + explain(Bound("summed", b.value, "rounds", w["summed"])).replace(": ", " bound: ", 1)
    if b.name in ("rounds", "rounds_per_chunk"):
        return f"from the {w['from']} bound" + (f" ({w['exact']})" if "exact" in w else "")
    if b.name == "throughput":
        return (f"{_ranks(w['sending_side'])} must send out {count(w['shares_that_must_leave'], 'share')} through "
                f"{w['capacity_out']} {w['unit']}: N * {w['capacity_out']} / {w['shares_that_must_leave']}")
    if b.name == "time":
        return (f"{w['steps']} x {w['alpha_us']} us + {count(w['rounds'], 'round')} x {w['round_us']} us "
                f"({w['chunk_bytes']} B per chunk at {w['gbps_per_unit']} GB/s; step by step, this C)")
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


