"""`python -m smtcoll` and the `smtcoll` command.

`smtcoll --version` answers here, before the command line parser (typer) is imported: start-up is most
of smtcoll's time on small instances (docs/benchmarks.md).
"""

import sys


def main() -> None:
    if sys.argv[1:] == ["--version"]:  # the one answer that needs no parser
        from smtcoll._version import __version__

        sys.stdout.write(f"smtcoll {__version__}\n")
        return
    from smtcoll.cli import main as run

    run()


if __name__ == "__main__":
    main()
