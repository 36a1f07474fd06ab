"""Which files `smtcoll verify` checks: the paths named, and the algorithm files found under directories.

A directory walk recognises algorithm files by their content, not their suffix, so that `smtcoll verify .`
in a repository skips `package.json`, certificates, CI configuration and `pom.xml`:
- an XML file whose root element is `<algo>` (MSCCL XML, after any XML declaration, comments, DOCTYPE),
  or a `.xml` file with no markup at all (empty, plain text: a broken algorithm file, reported unusable);
- a JSON object in one of the schedule formats `smtcoll.formats.schedules` reads: smtcoll's own
  (`"format": "smtcoll.schedule"`), SCCL/MSCCL's (`"msccl_type"`/`"sccl_type": "algorithm"`) or TACCL's
  (`"steps"` and `"collective"` at the top level).
Hidden directories (`.git`, `.venv`, ...) are not walked. A file named on the command line is checked
whatever it holds (a bad file is reported unusable), unless `detect_named` applies the directory rule to
it too (the pre-commit hook does, so that the hook and `smtcoll verify DIR` in CI agree).
"""

from __future__ import annotations

import fnmatch
import glob
import json
import os
import re
from collections.abc import Sequence

from smtcoll.errors import SmtcollError

SUFFIXES = (".xml", ".json", ".csv")
SNIFF_BYTES = 64 * 1024  # XML: the root element comes after at most this much prolog
PARSE_JSON_BYTES = 16 * 1024 * 1024  # JSON: larger files are recognised by their keys in the first SNIFF_BYTES

# XML prolog: declaration, processing instructions, comments, DOCTYPE (without an internal subset), space
_PROLOG = re.compile(r"\s*(?:<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^>\[]*>)", re.S)
_ALGO_ROOT = re.compile(r"\s*<algo[\s/>]")
_JSON_MARKERS = (re.compile(r'"format"\s*:\s*"smtcoll\.(?:schedule|transfers)"'),
                 re.compile(r'"(?:msccl|sccl)_type"\s*:\s*"algorithm"'),
                 re.compile(r'"1-Epoch_Duration"\s*:'))  # TE-CCL flow JSON (docs/formats.md)
_FOREST_ROOT = re.compile(r"\s*<Algo\s[^>]*nchunkspernode")  # ForestColl trees


def is_algorithm_file(path: str) -> bool:
    """True for an MSCCL XML program or a schedule JSON file, judged by content; False for anything else,
    including files that cannot be read (a walk skips them; naming them reports them)."""
    if not path.endswith(SUFFIXES):
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(SNIFF_BYTES)
            size = os.fstat(f.fileno()).st_size
            data = head + f.read() if path.endswith(".json") and size <= PARSE_JSON_BYTES else head
    except OSError:
        return False
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    if path.endswith(".xml"):
        return _is_algo_xml(text)
    if path.endswith(".csv"):  # a timed transfer log: its header row (docs/formats.md)
        from smtcoll.formats.transfers import is_transfer_log_csv

        return is_transfer_log_csv(text)
    return _is_schedule_json(text, complete=len(data) == size)


def _is_algo_xml(text: str) -> bool:
    """Root `<algo>`; or no markup at all (empty, truncated to nothing, plain text): a broken algorithm
    file is reported as unusable rather than skipped, while other XML documents (`pom.xml`) are skipped."""
    if not text.lstrip().startswith("<"):
        return True
    pos = 0
    while m := _PROLOG.match(text, pos):
        if m.end() == pos:
            break
        pos = m.end()
    return _ALGO_ROOT.match(text, pos) is not None or _FOREST_ROOT.match(text, pos) is not None


def _is_schedule_json(text: str, complete: bool) -> bool:
    if not complete:
        return any(m.search(text) for m in _JSON_MARKERS)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        # not JSON at all: a broken schedule is still recognisable by its markers, and then reported
        return any(m.search(text) for m in _JSON_MARKERS)
    if not isinstance(data, dict):
        return False
    return (data.get("format") in ("smtcoll.schedule", "smtcoll.transfers") or data.get("msccl_type") == "algorithm"
            or data.get("sccl_type") == "algorithm" or ("steps" in data and "collective" in data)
            or "1-Epoch_Duration" in data)


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
