"""Task results on disk, by the task's content hash (`Task.key`): an interrupted sweep resumes where it
stopped, and a sweep with one more node count computes only the new tasks.

Only successful results are stored (a failure is tried again next time). Each entry is written to a
temporary file in the same folder and renamed over the final name, so a sweep killed mid-write leaves no
half entry; an entry that does not parse is ignored and computed again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from smtcoll.errors import InputError
from smtcoll.files import write_text


class Cache:
    def __init__(self, folder: Path | None) -> None:
        self.folder = folder

    def _path(self, key: str) -> Path:
        assert self.folder is not None
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        if self.folder is None:
            return None
        try:
            data = json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and data.get("key") == key else None

    def put(self, key: str, result: dict[str, Any]) -> None:
        if self.folder is None:
            return
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise InputError(str(path.parent), f"cannot create the cache folder: {e.strerror or e}") from None
        write_text(path, json.dumps({**result, "key": key}, sort_keys=True))

