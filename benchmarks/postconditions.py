"""What the checker's expectation of a built-in `coll` costs now that it comes from the table of collectives
(one rule, `check/postconditions.builtin`) instead of one formula per collective (the formulas live on as
the oracle of `tests/check/test_postconditions_table.py`, imported here): CPU seconds of the expectation
alone at large geometries, and of a whole `check` of XML files with either, alternating in one run.

    python benchmarks/postconditions.py [FILE.xml ...]
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from smtcoll.check import postconditions  # noqa: E402  (after the path set-up: the clone's package)
from smtcoll.check.buffers import Geometry  # noqa: E402
from smtcoll.check.door import check  # noqa: E402

GEOMETRIES = [("alltoall", 64, 256, None), ("allgather", 256, 1024, None), ("allreduce", 256, 256, None),
              ("allreduce", 1024, 1, None), ("reduce_scatter", 128, 512, None), ("gather", 256, 256, 3)]


def _oracle() -> Any:
    spec = importlib.util.spec_from_file_location("oracle", REPO / "tests" / "check" / "test_postconditions_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.formulas


def main() -> None:
    formulas = _oracle()
    table = postconditions.builtin

    def by_formulas(geo: Geometry, root: int | None) -> postconditions.Expectation:
        kind = postconditions.ROOTED
        desc = geo.coll + (f" with root {root}" if geo.coll in kind else "")
        return postconditions.Expectation(geo.initial(), formulas(geo, root), postconditions._builtin_names(geo), desc)

    print("expectation alone (CPU s): coll, ranks, chunks per loop, formulas, table")
    for coll, ranks, chunks, root in GEOMETRIES:
        geo = Geometry(coll, ranks, chunks, False, {})
        t0 = time.process_time()
        formulas(geo, root)
        t1 = time.process_time()
        table(geo, root)
        t2 = time.process_time()
        print(f"  {coll:15} {ranks:5} {chunks:6} {t1 - t0:8.3f} {t2 - t1:8.3f}")
    if sys.argv[1:]:
        print("check of a file (CPU s, two alternating runs each): file, formulas, table")
    for path in sys.argv[1:]:
        times: dict[str, list[float]] = {"formulas": [], "table": []}
        for _ in range(2):
            for label, fn in (("formulas", by_formulas), ("table", table)):
                postconditions.builtin = fn
                t0 = time.process_time()
                report = check(path)
                times[label].append(time.process_time() - t0)
                assert report.verdict == "ok", (path, label, report.verdict)
        postconditions.builtin = table
        print(f"  {Path(path).name:16} {min(times['formulas']):8.2f} {min(times['table']):8.2f}")


if __name__ == "__main__":
    main()
