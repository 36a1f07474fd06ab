"""The options several commands share, declared once so that a name means one thing everywhere.

Conventions (docs/cli.md): `--format` has no short form (`-f` is `--force`, as in msccl-tools); `-o` never
replaces an existing file without `--force`; ranges and choices are declared here, so typer checks them
and lists them in `--help`; metavars are explicit, so that the help text does not depend on how the
installed typer names types.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

import typer

from smtcoll.errors import OutputError
from smtcoll.files import check_writable

MAX_CHUNKS = 64  # chunks per input: far beyond what any solver call or runtime handles
MAX_NODES = 64
MAX_TIMEOUT_S = 7 * 24 * 3600.0


class Format(enum.StrEnum):
    text = "text"
    json = "json"


class Runtime(enum.StrEnum):
    """The MSCCL runtime that must accept a program (`verify`)."""

    executor = "executor"
    legacy = "legacy"
    any = "any"


class Protocol(enum.StrEnum):
    """The NCCL protocol of a lowered kernel (`lower`, `synth --xml`)."""

    Simple = "Simple"
    LL = "LL"
    LL128 = "LL128"


class Target(enum.StrEnum):
    """The runtime(s) a lowered file is for (`lower`, `synth --xml`)."""

    auto = "auto"
    both = "both"
    executor = "executor"
    legacy = "legacy"


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
RuntimeOpt = Annotated[Runtime, typer.Option("--runtime", metavar="executor|legacy|any",
                                             help="the MSCCL runtime that must accept the files")]
TimeoutOpt = Annotated[float | None, typer.Option(
    "--timeout", metavar="SECONDS", min=0.001, max=MAX_TIMEOUT_S,
    help="time limit in seconds (exit 3 when reached, with what is known)")]
ForceOpt = Annotated[bool, typer.Option("--force", "-f", metavar="", help="replace output files that exist")]
DrawOpt = Annotated[Path | None, typer.Option("--draw", metavar="FILE.png|FILE.svg",
                                                 help="draw a picture to a .png or .svg file (needs matplotlib)")]


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
