"""`smtcoll sweep`: the verified algorithm directory for a machine, every collective, node count and size
(docs/sweep.md). A thin shell over `smtcoll.sweep`.

Exit codes: 0 every task produced its files; 1 some task failed or timed out (recorded in the manifest,
the other files are written); 2 unusable input, or the Dask scheduler cannot be reached.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from smtcoll import limits as limits_mod
from smtcoll.cli.app import Format, app, print_json
from smtcoll.cli.extras import missing_extra
from smtcoll.cli.options import RUNTIME_METAVAR, Runtime, timeout_callback
from smtcoll.errors import ModelError, SmtcollError, UsageError

EXIT_FAILED_TASKS = 1


def _names(values: list[str], where: str) -> tuple[str, ...]:
    out = tuple(x.strip() for v in values for x in v.split(",") if x.strip())
    if not out:
        raise ModelError(where, "give at least one")
    if len(set(out)) != len(out):
        raise ModelError(where, f"lists a name twice: {', '.join(out)}")
    return out


def _no_plot() -> str:
    """Why there is no plot: matplotlib is missing, or there was nothing to draw (no file was written)."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        return "; no plot (install matplotlib)"
    return "; no plot (no algorithm to draw)"


def _nodes(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise ModelError("--nodes", f"{text!r}: expected node counts separated by commas, e.g. 1,2,4") from None
    for v in values:  # the range of --nodes in every command
        problem = limits_mod.nodes_problem(v)
        if problem:
            raise UsageError("--nodes", problem)
    if len(set(values)) != len(values):
        raise ModelError("--nodes", f"{text!r}: node counts must be distinct")
    return tuple(sorted(values))


@app.command("sweep")
def sweep_command(
    topology: Annotated[list[str] | None, typer.Option("--topology", "-t", metavar="NAME|FILE",
                                                          help="a built-in name (ndv2, ring:8) or a "
                                                          "topology .toml file; repeat or separate with commas "
                                                          "(required)")] = None,
    collective: Annotated[list[str] | None, typer.Option("--collective", "-c", metavar="NAME|FILE",
                                                            help="collectives, e.g. allreduce,allgather (built-in "
                                                            "names or .toml files; required)")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", metavar="DIR",
                                                   help="the algorithm directory to write (only XML "
                                                   "files; the manifest, report and plot go to OUTPUT.sweep/; "
                                                   "required)")] = None,
    nodes: Annotated[str, typer.Option(metavar="N[,N...]",
                                       help="node counts, e.g. 1,2,4 (composed through the NIC model)")] = "1",
    sizes: Annotated[str, typer.Option(metavar="LOW:HIGH",
                                       help="buffer sizes to cover, LOW:HIGH, both included (nBytes as the "
                                       "runtime counts it)")] = "1KiB:4GiB",
    runtime: Annotated[Runtime, typer.Option(metavar=RUNTIME_METAVAR,
                                             help="the runtime(s) to write for: auto, both, executor or legacy; "
                                             "both: OUTPUT/executor and "
                                             "OUTPUT/legacy; auto (or any): executor")] = Runtime.executor,
    timeout: Annotated[float, typer.Option(metavar="SECONDS", callback=timeout_callback,
                                           help="the synthesizer's time limit per task in seconds (the best "
                                           "frontier found by then is used)")] = 60.0,
    max_chunks: Annotated[int, typer.Option(metavar="C", help="the most chunks per input on the Pareto frontier")] = 4,
    max_steps: Annotated[int | None, typer.Option(metavar="S", help="give up above this many steps")] = None,
    task_timeout: Annotated[float | None, typer.Option(metavar="SECONDS", help="kill a task after this many seconds "
                                                          "(default: 2 x --timeout + 1800)")] = None,
    task_memory: Annotated[str, typer.Option(metavar="SIZE",
                                             help="address-space limit of a task, e.g. 4GiB (0: none)")] = "4GiB",
    workers: Annotated[int | None, typer.Option(metavar="N", help="worker processes of the local Dask cluster "
                                                   "(default: the number of CPUs)")] = None,
    scheduler: Annotated[str | None, typer.Option(metavar="ADDRESS",
                                                     help="attach to this Dask scheduler (tcp://host:8786) "
                                                     "instead of starting a local cluster")] = None,
    scheduler_file: Annotated[Path | None, typer.Option(metavar="FILE",
                                                           help="attach to the Dask scheduler described by "
                                                           "this file (dask scheduler --scheduler-file)")] = None,
    dashboard: Annotated[str | None, typer.Option(metavar="ADDRESS", help="serve the local cluster's Dask "
                                                     "dashboard at this address, e.g. :8787 (default: none)")] = None,
    cache: Annotated[Path | None, typer.Option(metavar="DIR",
                                                  help="the task cache folder (default: OUTPUT.sweep/cache)")] = None,
    model: Annotated[Path | None, typer.Option("--model", metavar="FILE",
                                                  help="the cost model's knob file (TOML; default: the shipped "
                                                  "specs/models/default.toml, see --print-model)")] = None,
    print_model: Annotated[bool, typer.Option("--print-model", metavar="",
                                              help="print the cost model's knob file (--model's or the "
                                              "default) and exit: copy it, edit it, pass it with --model")] = False,
    alpha_us: Annotated[float | None, typer.Option("--alpha-us", metavar="US",
                                                      help="latency (µs) of links without timing (the model's "
                                                      "default_alpha_us)")] = None,
    gbps_per_unit: Annotated[float | None, typer.Option("--gbps-per-unit", metavar="GBPS",
                                                           help="GB/s per unit of bandwidth of links without "
                                                           "timing (the model's default_gbps)")] = None,
    prove: Annotated[bool, typer.Option("--prove", metavar="", help="write certificates of the frontier's claims into "
                                        "OUTPUT.sweep/proofs")] = False,
    fmt: Annotated[Format, typer.Option("--format", metavar="text|json",
                                        help="text for people, json (the manifest) for "
                                        "scripts")] = Format.text,
) -> None:
    """Synthesize, select by size, lower and verify the algorithms of a whole cluster, on Dask."""
    try:
        import distributed  # noqa: F401
        import jsonschema  # noqa: F401
        import z3  # noqa: F401
    except ImportError as e:
        raise SmtcollError(missing_extra(e, "sweep") or f"smtcoll sweep cannot start: {e}") from None
    from fractions import Fraction

    import attrs

    from smtcoll.sweep import cost
    from smtcoll.sweep.plan import Request, sweep
    from smtcoll.sweep.run import Limits, Where, rich_progress
    from smtcoll.sweep.sizes import parse_range, parse_size
    from smtcoll.sweep.tasks import Options

    limits_mod.check_timeout(task_timeout, "--task-timeout")
    for name, value in (("--alpha-us", alpha_us),
                        ("--gbps-per-unit", gbps_per_unit)):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise ModelError(name, f"must be a finite number > 0, got {value}")
    for name, ivalue, low in (("--max-chunks", max_chunks, 1), ("--max-steps", max_steps, 1),
                              ("--workers", workers, 1)):
        if ivalue is not None and ivalue < low:
            raise ModelError(name, f"must be >= {low}, got {ivalue}")
    if scheduler is not None and scheduler_file is not None:
        raise ModelError("--scheduler", "give --scheduler or --scheduler-file, not both")
    if print_model:
        path = model or cost.default_model_path()
        cost.Model.load(path)  # a wrong file is an error here too
        typer.echo(path.read_text(), nl=False)
        return
    for flag, given in (("--topology", topology), ("--collective", collective), ("--output", output)):
        if not given:
            raise ModelError(flag, "required (or give --print-model)")
    assert topology is not None and collective is not None and output is not None
    knobs = cost.Model.load(model)
    if alpha_us is not None:
        knobs = attrs.evolve(knobs, default_alpha_us=Fraction(repr(alpha_us)))
    if gbps_per_unit is not None:
        knobs = attrs.evolve(knobs, default_gbps=Fraction(repr(gbps_per_unit)))
    runtimes = {"both": ("executor", "legacy"), "auto": ("executor",)}.get(runtime.canonical, (runtime.canonical,))
    options = Options(parse_range(sizes), runtimes, timeout, max_chunks, max_steps, knobs, prove)
    request = Request(_names(topology, "--topology"), _nodes(nodes), _names(collective, "--collective"), options)
    # the synthesis is bounded by --timeout; timing every candidate's lowered program is not, and takes
    # minutes on machines of 16-32 ranks (ndv2 Allreduce 4 CPU min, dgx2 x2 Allreduce 24): the default is a
    # safety stop for a hung task, not a budget
    limits = Limits(task_timeout if task_timeout is not None else 2 * timeout + 1800,
                    parse_size(task_memory, "--task-memory"))
    where = Where(workers or os.cpu_count() or 1, scheduler, scheduler_file, dashboard)
    show, stop = rich_progress("tasks") if sys.stdout.isatty() and fmt is Format.text else (None, None)
    try:
        outcome = sweep(request, output, limits, where, cache, show)
    finally:
        if stop is not None:
            stop()
    if fmt is Format.json:
        print_json(outcome.manifest)
    else:
        typer.echo(outcome.report, nl=False)
        typer.echo(f"algorithms: {output}/ (every file verified); manifest: {outcome.manifest_path}"
                   + (f"; plot: {outcome.plot}" if outcome.plot else _no_plot()))
    if outcome.manifest["summary"]["failed"]:
        raise typer.Exit(EXIT_FAILED_TASKS)
