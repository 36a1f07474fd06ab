"""The sweep's outputs: the algorithm directory and, beside it, the manifest (JSON) and the proofs.

`DIR` holds only algorithm files (`DIR/executor/` and `DIR/legacy/` when both runtimes are asked for, since
the two runtimes read `maxBytes` differently). Everything else goes into the sibling folder `DIR.sweep/`:
`manifest.json` (its shape: `manifest.schema.json` in this package), `report.txt`, `bandwidth.png`,
`proofs/` and, unless `--cache` says otherwise, `cache/`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from smtcoll.errors import InputError, SmtcollError
from smtcoll.files import write_text
from smtcoll.sweep.tasks import Invalid, Options, Task

FORMAT = "smtcoll-sweep/3"  # 3: a file per mode (`mode`), out-of-place and in-place
SCHEMA = Path(__file__).with_name("manifest.schema.json")


def side_folder(out: Path) -> Path:
    return out.parent / f"{out.name}.sweep"


def _folder(runtime: str, options: Options) -> str:
    return f"{runtime}/" if len(options.runtimes) > 1 else ""


def build(tasks: Sequence[Task | Invalid], results: dict[str, dict[str, Any]], options: Options,
          request: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """(manifest, algorithm files by relative path, proof files by relative path): a function of the
    tasks' results only, in the tasks' fixed order."""
    files: dict[str, str] = {}
    proofs: dict[str, str] = {}
    entries, task_rows = [], []
    found_versions: dict[str, str] = {}
    for t in tasks:
        if isinstance(t, Invalid):
            task_rows.append({**t.describe(), "key": None, "status": "failed", "why": t.why, "attempts": [],
                              "files": [], "rejected": [], "certificates": []})
            continue
        res = results[t.key()]
        row: dict[str, Any] = {**t.describe(), "key": t.key(), "status": res["status"]}
        if res["status"] != "ok":
            row["why"] = res.get("why", "unknown")
            row["attempts"] = res.get("attempts", [row["why"]])
        if "synth" in res:
            row["synth"] = res["synth"]
        if "candidates" in res:
            row["candidates"] = res["candidates"]
        row["files"], row["rejected"], row["certificates"] = [], res.get("rejected", []), []
        found_versions = found_versions or res.get("versions", {})
        for f in res.get("files", []):
            rel = _folder(f["runtime"], options) + f["name"]
            if rel in files:
                raise InputError(rel, "two tasks write the same file (two topologies with the same name?)")
            files[rel] = f["xml"]
            # the hash of the bytes written, whatever the result says (it may come from the cache)
            entries.append({"file": rel, **{k: v for k, v in f.items() if k not in ("xml", "name")},
                            "sha256": hashlib.sha256(f["xml"].encode()).hexdigest()})
            row["files"].append(rel)
        for c in res.get("certificates", []):
            names = []
            for name, text in sorted(c["files"].items()):
                rel = f"proofs/{t.slug()}/{name}"
                proofs[rel] = text
                names.append(rel)
            row["certificates"].append({"claim": c["claim"], "files": names, "why": c.get("why")})
        task_rows.append(row)
    manifest = {
        "format": FORMAT,
        "versions": found_versions,
        "request": request,
        "model": options.model.to_json(),
        "files": entries,
        "tasks": task_rows,
        "summary": {"tasks": len(tasks), "failed": sum(1 for r in task_rows if r["status"] != "ok"),
                    "files": len(entries)},
    }
    return manifest, files, proofs


def dumps(manifest: dict[str, Any]) -> str:
    return json.dumps(manifest, indent=2, sort_keys=False) + "\n"


def validate(manifest: dict[str, Any]) -> None:
    """The manifest has the shape its schema promises (a failure here is a bug of ours)."""
    import jsonschema

    try:
        jsonschema.validate(manifest, json.loads(SCHEMA.read_text()))
    except jsonschema.ValidationError as e:
        raise SmtcollError(f"internal error: the manifest does not match its schema at "
                           f"{'/'.join(map(str, e.absolute_path))}: {e.message}") from None


def write(out: Path, manifest: dict[str, Any], files: dict[str, str], proofs: dict[str, str]) -> Path:
    """Write the directory (only the algorithm files) and the side folder; returns the manifest's path.

    Files a previous sweep wrote there and this one does not are removed; a file in `out` that no sweep
    wrote is an error (the runtime would load it too), and nothing is written then."""
    validate(manifest)
    side = side_folder(out)
    previous: set[str] = set()
    try:
        old = json.loads((side / "manifest.json").read_text())
        previous = {f["file"] for f in old.get("files", []) if isinstance(f, dict) and isinstance(f.get("file"), str)}
    except (OSError, ValueError, AttributeError):
        pass
    if out.exists() and not out.is_dir():
        raise InputError(str(out), "exists and is not a directory")
    if out.is_dir():
        strangers = sorted(str(p.relative_to(out)) for p in out.rglob("*")
                           if p.is_file() and str(p.relative_to(out)) not in previous | set(files))
        if strangers:
            raise InputError(str(out), f"holds files smtcoll sweep did not write ({', '.join(strangers[:3])}"
                                       f"{' ...' if len(strangers) > 3 else ''}); the runtime would load them too: "
                                       "give an empty or new directory")
    try:
        for rel in sorted(previous - set(files)):
            (out / rel).unlink(missing_ok=True)
        for rel, text in sorted(files.items()):
            path = out / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists() or path.read_text() != text:
                write_text(path, text)
        out.mkdir(parents=True, exist_ok=True)
        for rel, text in sorted(proofs.items()):
            path = side / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text(path, text)
        side.mkdir(parents=True, exist_ok=True)
        write_text(side / "manifest.json", dumps(manifest))
    except OSError as e:
        raise InputError(str(getattr(e, "filename", None) or out), f"cannot write: {e.strerror or e}") from None
    return side / "manifest.json"
