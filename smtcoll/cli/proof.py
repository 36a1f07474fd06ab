"""`smtcoll proof check`: re-check certificates without trusting whoever wrote them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from smtcoll.cli.app import Format, app, print_json
from smtcoll.cli.options import TIMEOUT_HELP, FormatOpt, timeout_callback
from smtcoll.errors import EXIT_LIMIT, EXIT_UNUSABLE, EXIT_WRONG, InputError
from smtcoll.proofs.solvers import DEFAULT_TIMEOUT_S
from smtcoll.vocabulary import CERTIFICATE_VERDICTS, VERDICT_TEXT

proof_app = typer.Typer(help="Optimality certificates: re-check them.", no_args_is_help=True)
app.add_typer(proof_app, name="proof")



@proof_app.command("check")
def check_command(
    paths: Annotated[list[Path], typer.Argument(metavar="PATH",
                                                help="certificate files (.json) or directories of them")],
    timeout: Annotated[float, typer.Option(metavar="SECONDS", callback=timeout_callback,
                                           help="time limit per solver per formula: " + TIMEOUT_HELP)]
    = DEFAULT_TIMEOUT_S,
    fmt: FormatOpt = Format.text,
) -> None:
    """Re-check certificates: hashes, claims, witnesses recomputed, formulas regenerated and re-solved by
    z3 and cvc5. Exit 0: every claim holds; 1: a certificate is wrong; 2: unusable input; 3: a solver gave
    no answer within --timeout (not re-proved, not shown wrong)."""
    for p in paths:
        if not p.exists():
            raise InputError(str(p), "no such file or directory")
    from smtcoll.proofs import certificate_files, check_certificate  # networkx: only when this command runs

    files = certificate_files(paths)
    if not files:
        raise InputError(", ".join(map(str, paths)), "no certificate (*.json) found")
    results = []
    for f in files:
        r = check_certificate(f, timeout)
        results.append(r)
        if fmt is Format.text:
            typer.echo(f"{VERDICT_TEXT[r.verdict]}: {r.file}" + (f": {r.claim}" if r.claim else ""))
            for m in r.messages:
                typer.echo(f"  {m}")
    if fmt is Format.json:
        print_json([r.to_json() for r in results])
    else:
        counts = {v: sum(r.verdict == v for r in results) for v in CERTIFICATE_VERDICTS}
        typer.echo(f"{len(results)} certificate(s): {counts['ok']} ok, {counts['error']} wrong, "
                   f"{counts['unusable']} unusable, {counts['timeout']} timeout"
                   + (" (not re-proved in time: raise --timeout)" if counts["timeout"] else ""))
    # SystemExit, not typer.Exit: the exit code must survive any way the app is run
    for verdict, code in (("error", EXIT_WRONG), ("unusable", EXIT_UNUSABLE), ("timeout", EXIT_LIMIT)):
        if any(r.verdict == verdict for r in results):
            sys.exit(code)
