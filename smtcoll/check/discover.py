"""Which files `smtcoll verify` checks: the paths named, and the algorithm files found under directories.

A directory walk recognises algorithm files by their content, not their suffix, so that `smtcoll verify .`
in a repository skips `package.json`, certificates, CI configuration and `pom.xml`: a file with a suffix
some input format reads is checked when a row of the format registry claims it (`Format.claims` in
`smtcoll/formats/registry.py`: MSCCL XML and ForestColl roots, the schedule and timed JSON formats by their
keys, the transfer log's CSV header). Hidden directories (`.git`, `.venv`, ...) are not walked. A file named
on the command line is checked whatever it holds (a bad file is reported unusable), unless `detect_named`
applies the directory rule to it too (the pre-commit hook does, so that the hook and `smtcoll verify DIR` in
CI agree).
"""

from __future__ import annotations

import fnmatch
import glob
import os
from collections.abc import Sequence

from smtcoll.errors import SmtcollError
from smtcoll.formats import registry
from smtcoll.formats.source import Source

SNIFF_BYTES = 64 * 1024  # XML: the root element comes after at most this much prolog
PARSE_JSON_BYTES = 16 * 1024 * 1024  # JSON: larger files are recognised by their keys in the first SNIFF_BYTES


def is_algorithm_file(path: str) -> bool:
    """True for a file some input format claims, judged by content; False for anything else, including files
    that cannot be read (a walk skips them; naming them reports them)."""
    if not path.endswith(registry.suffixes()):
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(SNIFF_BYTES)
            size = os.fstat(f.fileno()).st_size
            data = head + f.read() if path.endswith(".json") and size <= PARSE_JSON_BYTES else head
    except OSError:
        return False
    return registry.claimed(Source(path, data, complete=len(data) == size))


def excluded(path: str, patterns: Sequence[str]) -> bool:
    """A glob matches a file or directory by its name or by its path as walked (`/` separators):
    `proofs`, `*.sccl.json`, `build/*`, `*/old/*`."""
    norm = path.replace(os.sep, "/")
    while norm.startswith("./"):
        norm = norm[2:]
    name = os.path.basename(norm.rstrip("/"))
    return any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(norm, p.rstrip("/")) for p in patterns)


def _walk(top: str, exclude: Sequence[str]) -> set[str]:
    """The algorithm files under `top`. An explicit stack, not `os.walk`, which recurses once per level in
    Python 3.11 (a tree 1500 deep raised RecursionError); symlinked directories are not followed (no loops),
    and unreadable directories are skipped, as os.walk does."""
    found: set[str] = set()
    stack = [top]
    while stack:
        root = stack.pop()
        try:
            with os.scandir(root) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            path = os.path.join(root, e.name)
            try:
                is_dir = e.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if not e.name.startswith(".") and not excluded(path, exclude):
                    stack.append(path)
            elif not excluded(path, exclude) and is_algorithm_file(path):
                found.add(path)
    return found


def expand(paths: Sequence[str], exclude: Sequence[str] = (), detect_named: bool = False) -> list[str]:
    """Files named, algorithm files found under directories (recursively) or matched by globs; sorted,
    without duplicates. A path that matches nothing is kept, so that it is reported as unusable."""
    found: set[str] = set()
    for p in paths:
        if os.path.isdir(p):
            found |= _walk(p, exclude)
        elif os.path.exists(p):
            if not detect_named or (not excluded(p, exclude) and is_algorithm_file(p)):
                found.add(p)
        elif glob.has_magic(p):
            try:
                matches = glob.glob(p, recursive=True)
            except RecursionError:  # `**` over a very deep tree: glob recurses once per level
                raise SmtcollError(f"{p}: the directories under this glob are nested too deeply for `**`; "
                                   "name the directory instead (it is walked without a depth limit)") from None
            for m in matches:
                if os.path.isdir(m):
                    found |= _walk(m, exclude)
                elif not excluded(m, exclude) and is_algorithm_file(m):
                    found.add(m)
        else:
            found.add(p)
    return sorted(found)
