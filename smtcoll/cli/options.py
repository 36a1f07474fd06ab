"""The options several commands share, declared once so that a name means one thing everywhere.

Conventions (docs/cli.md): `--format` has no short form (`-f` is `--force`, as in msccl-tools); `-o` never
replaces an existing file without `--force`; ranges and choices are declared here, so typer checks them
and lists them in `--help`; metavars are explicit, so that the help text does not depend on how the
installed typer names types.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated

import typer

from smtcoll import limits
from smtcoll.choices import checked_runtime
from smtcoll.choices import runtime as choices_runtime
from smtcoll.errors import OutputError
from smtcoll.files import check_writable

MAX_CHUNKS = 64  # chunks per input: far beyond what any solver call or runtime handles
MAX_NODES = limits.MAX_NODES
MAX_TIMEOUT_S = limits.MAX_TIMEOUT_S


class Format(enum.StrEnum):
    text = "text"
    json = "json"


class Runtime(enum.StrEnum):
    """The MSCCL runtime(s) of `--runtime`, one value set for verify, lower, synth and sweep (what each value
    means per command: smtcoll/choices.py); `any` is an alias of `auto`."""

    auto = "auto"
    both = "both"
    executor = "executor"
    legacy = "legacy"
    any = "any"

    @property
    def checked(self) -> str:
        """The checker's spelling: any, both, executor or legacy (smtcoll/choices.py)."""
        return checked_runtime(self.value)

    @property
    def canonical(self) -> str:
        return choices_runtime(self.value)


class Protocol(enum.StrEnum):
    """The NCCL protocol of a lowered kernel (`lower`, `synth --xml`)."""

    Simple = "Simple"
    LL = "LL"
    LL128 = "LL128"


Target = Runtime  # `lower` and `synth --xml`: one value set for --runtime in every command (smtcoll/choices.py)


FormatOpt = Annotated[Format, typer.Option("--format", metavar="text|json",
                                           help="text for people, json for scripts")]
TopologyOpt = Annotated[str, typer.Option("--topology", "-t", metavar="NAME|FILE",
                                          help="a built-in name (dgx1, ring:8, torus2d:4x4) or a .toml file")]
CollectiveOpt = Annotated[str, typer.Option("--collective", "-c", metavar="NAME|FILE",
                                            help="a built-in name (allgather, allreduce) or a .toml file")]
RootOpt = Annotated[int | None, typer.Option("--root", metavar="RANK", min=0,
                                                help="root rank of a rooted collective (broadcast, reduce, ...)")]
ChunksOpt = Annotated[int, typer.Option("--chunks", metavar="C", min=1, max=MAX_CHUNKS,
                                        help="split every chunk in C")]
NodesOpt = Annotated[int, typer.Option("--nodes", metavar="N", min=1, max=MAX_NODES,
                                       help="compose N nodes through the topology's NIC model")]
# the choices go in the help text: "auto|both|executor|legacy" is wider than the type column at 80 columns,
# and rich cut it mid-word ("legac" / "y")
RUNTIME_METAVAR = "RUNTIME"
RuntimeOpt = Annotated[Runtime, typer.Option("--runtime", metavar=RUNTIME_METAVAR,
                                             help="the MSCCL runtime(s) that must accept the files: auto, both, "
                                             "executor or legacy; auto (or any): at least one, both: each")]
def timeout_callback(value: float | None) -> float | None:
    """One range and one message for --timeout in every command (0, NaN, 1e9: smtcoll.limits.timeout_problem);
    typer's own range check lets NaN through and words its message apart."""
    problem = None if value is None else limits.timeout_problem(value)
    if problem:
        raise typer.BadParameter(problem)
    return value


TIMEOUT_HELP = f"time limit in seconds, {limits.MIN_TIMEOUT_S:g} to {MAX_TIMEOUT_S:.0f} (7 days)"
TimeoutOpt = Annotated[float | None, typer.Option(
    "--timeout", metavar="SECONDS", callback=timeout_callback,
    help=TIMEOUT_HELP + " (exit 3 when reached, with what is known)")]
ForceOpt = Annotated[bool, typer.Option("--force", "-f", metavar="", help="replace output files that exist")]
DrawOpt = Annotated[Path | None, typer.Option("--draw", metavar="FILE.png|FILE.svg",
                                                 help="draw a picture to a .png or .svg file (needs matplotlib)")]


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)  # follows symlinks; also catches hard links
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def refuse_input_as_output(option: str, output: Path | str | None, inputs: Iterable[Path | str | None]) -> None:
    """Refuse an output file that is also one of the command's inputs (the file checked, the schedule
    lowered, a topology or collective spec), even with `--force`: the output would destroy what it was made
    from, and a second run would read the report instead of the input."""
    if output is None:
        return
    for given in inputs:
        if given is not None and os.path.exists(given) and _same_file(str(output), str(given)):
            raise OutputError(str(output), f"{option} is also an input ({given}); smtcoll never replaces a file "
                                           "it reads, even with --force: choose another file name")


def refuse_overwrite(force: bool, *paths: Path | str | None) -> None:
    """Refuse to replace an existing file unless `--force`, and any target the safe writer would refuse (a
    folder that does not exist, a directory, a device): checked before any work is done, so that a long
    synthesis is never thrown away at the end."""
    given = [p for p in paths if p is not None]
    for p in given:
        check_writable(p)
    if force:
        return
    existing = [str(p) for p in given if Path(p).is_file()]
    if len(existing) == 1:
        raise OutputError(existing[0], "exists; use --force (-f) to replace it")
    if existing:
        raise OutputError(existing[0], f"exists (and {', '.join(existing[1:])}); use --force (-f) to replace them")
