"""What to install when a command needs a package the light install leaves out.

The base package is the checker; synthesis, bounds and certificates need the `synth` extra (z3, scipy,
networkx), drawings the `draw` extra (matplotlib), the second proof solver the `proofs` extra (cvc5).
"""

from __future__ import annotations

# top-level module -> (PyPI package, extra that installs it)
EXTRA_OF = {
    "z3": ("z3-solver", "synth"),
    "scipy": ("scipy", "synth"),
    "numpy": ("numpy", "synth"),
    "networkx": ("networkx", "synth"),
    "matplotlib": ("matplotlib", "draw"),
    "cvc5": ("cvc5", "proofs"),
    "dask": ("dask[distributed]", "sweep"),
    "distributed": ("dask[distributed]", "sweep"),
    "jsonschema": ("jsonschema", "sweep"),
}


def install_hint(extra: str) -> str:
    return f"pip install 'smtcoll[{extra}]' (from a clone of the repository: pip install -e '.[{extra}]')"


def missing_extra(error: ImportError, command: str | None = None) -> str | None:
    """The message for a package of an extra that is not installed, or None for any other import error."""
    name = (getattr(error, "name", None) or "").split(".")[0]
    if name not in EXTRA_OF:
        return None
    package, extra = EXTRA_OF[name]
    what = f"smtcoll {command}" if command else "this command"
    return f"{what} needs {package}, which the light install leaves out: {install_hint(extra)}"
