"""Judging by the output: a race, an uninitialized read or a double count is an error when its value can
reach an output chunk, a `dead-*` warning when it cannot (`strict=True` / `--strict`: an error); a self-copy
created by in-place aliasing is a read, not a write, for races."""

from __future__ import annotations

from pathlib import Path

from helpers.xmlgen import algo, allgather2, gpu, step, tb, write

from smtcoll.check.program import check_program_file
from smtcoll.check.report import Report


def check(tmp_path: Path, text: str, **kw) -> Report:
    return check_program_file(write(tmp_path, text), **kw)


def codes(report: Report, severity: str = "error") -> set[str]:
    return {v.code for v in report.violations if v.severity == severity}


def allgather_with(extra: dict[int, str], scratch: int = 2) -> str:
    """The correct 2-rank allgather of xmlgen, plus extra thread blocks (tb 2, 3, ...) per rank."""
    def rank(r: int) -> str:
        peer = 1 - r
        return gpu(r, 1, 2, scratch,
                   tb(0, -1, -1, 0, step(0, "cpy", "i", 0, "o", r, hasdep=1)),
                   tb(1, peer, peer, 0, step(0, "s", "o", r, "o", r, depid=0, deps=0),
                      step(1, "r", "o", peer, "o", peer)),
                   *([extra[r]] if r in extra else []))
    return algo(rank(0), rank(1))


def test_uninitialized_scratch_that_reaches_no_output_is_a_dead_read(tmp_path: Path) -> None:
    # TACCL plans carry a useless stream on scratch: copying a never-written s chunk changes no output
    text = allgather_with({0: tb(2, -1, -1, 0, step(0, "cpy", "s", 0, "s", 1))})
    r = check(tmp_path, text)
    assert r.verdict == "ok" and "dead-read" in codes(r, "warning")
    strict = check(tmp_path, text, strict=True)
    assert strict.verdict == "error" and "dead-read" in codes(strict)


def test_uninitialized_read_that_reaches_an_output_is_an_error(tmp_path: Path) -> None:
    # the same read, but rank 0 then adds the garbage into its own output chunk before sending it
    def rank(r: int) -> str:
        peer = 1 - r
        first = [step(0, "cpy", "i", 0, "o", r, hasdep=1)]
        extra = []
        if r == 0:
            first = [step(0, "cpy", "i", 0, "o", 0), step(1, "re", "s", 1, "o", 0, depid=2, deps=0, hasdep=1)]
            extra = [tb(2, -1, -1, 0, step(0, "cpy", "s", 0, "s", 1, hasdep=1))]
        return gpu(r, 1, 2, 2, tb(0, -1, -1, 0, *first),
                   tb(1, peer, peer, 0, step(0, "s", "o", r, "o", r, depid=0, deps=0),
                      step(1, "r", "o", peer, "o", peer)),
                   *extra)
    r = check(tmp_path, algo(rank(0), rank(1)))
    assert r.verdict == "error" and "read-before-write" in codes(r) and "deadlock" not in codes(r)


def test_race_on_scratch_nobody_reads_is_a_dead_race(tmp_path: Path) -> None:
    # two thread blocks write s[0] with no order between them; nothing reads s[0] afterwards
    text = allgather_with({0: tb(2, -1, -1, 0, step(0, "cpy", "i", 0, "s", 0)) + "\n"
                              + tb(3, -1, -1, 0, step(0, "cpy", "o", 0, "s", 0, depid=0, deps=0))})
    r = check(tmp_path, text)
    assert r.verdict == "ok" and "dead-race" in codes(r, "warning")
    assert "dead-race" in codes(check(tmp_path, text, strict=True))


def test_race_whose_value_is_sent_to_an_output_stays_an_error(tmp_path: Path) -> None:
    # the copy into o[0] of rank 0 is not ordered before the send of o[0]: the peer's output may be stale
    assert {"race", "read-before-write"} & codes(check(tmp_path, allgather2(first_dep=False)))


def test_double_count_into_dead_scratch_is_a_warning(tmp_path: Path) -> None:
    # s[0] = i[0]; s[0] += i[0] (counted twice) and never read again: the allreduce output is right
    text = allgather_with({0: tb(2, -1, -1, 0, step(0, "cpy", "i", 0, "s", 0), step(1, "re", "i", 0, "s", 0))})
    r = check(tmp_path, text)
    assert r.verdict == "ok" and "dead-double-count" in codes(r, "warning")


def in_place_allgather(self_copy_dep: bool) -> str:
    """In place, i aliases o[r]: `cpy i[0] -> o[r]` is a self-copy (SCCL's pre-synthesized files and
    MSCCL-XML-Builder's both-mode files have them), concurrent with the send of o[r]."""
    def rank(r: int) -> str:
        peer = 1 - r
        dep = {"depid": 0, "deps": 0} if self_copy_dep else {}
        return gpu(r, 1, 2, 0,
                   tb(0, -1, -1, 0, step(0, "cpy", "i", 0, "o", r, hasdep=1)),
                   tb(1, peer, peer, 0, step(0, "s", "o", r, "o", r, **dep), step(1, "r", "o", peer, "o", peer)))
    return algo(rank(0), rank(1), inplace=1, outofplace=0)


def test_self_copy_after_in_place_aliasing_is_not_a_write(tmp_path: Path) -> None:
    # it rewrites the bytes that are there: every interleaving with the send gives the same output
    r = check(tmp_path, in_place_allgather(self_copy_dep=False))
    assert r.verdict == "ok", [v.message for v in r.errors]
    assert "race" not in codes(r)


def test_the_same_copy_out_of_place_is_a_real_copy(tmp_path: Path) -> None:
    text = in_place_allgather(self_copy_dep=False).replace('inplace="1" outofplace="0"', 'inplace="0" outofplace="1"')
    assert {"race", "read-before-write"} & codes(check(tmp_path, text))


def test_strict_option_makes_dead_findings_fail_the_command(tmp_path: Path, cli) -> None:
    path = write(tmp_path, allgather_with({0: tb(2, -1, -1, 0, step(0, "cpy", "s", 0, "s", 1))}))
    assert cli("verify", str(path)).returncode == 0
    strict = cli("verify", "--strict", str(path))
    assert strict.returncode == 1 and "dead-read" in strict.stdout


def test_many_dead_reads_keep_their_severity_in_the_summary(tmp_path: Path) -> None:
    # 30 dead reads of never-written scratch (more than the report lists): the summary line stands for
    # warnings, so it is a warning, and the file is ok (issue 20, class 1)
    dead = 30
    text = allgather_with({0: tb(2, -1, -1, 0, *(step(k, "cpy", "s", k, "s", dead + k) for k in range(dead)))},
                          scratch=2 * dead)
    r = check(tmp_path, text)
    dead_reads = [v for v in r.violations if v.code == "dead-read"]
    assert r.verdict == "ok", [v.to_json() for v in r.errors]
    assert {v.severity for v in dead_reads} == {"warning"}
    assert dead_reads[-1].message == f"... and {dead - 20} more dead-read finding(s)"


def test_summaries_count_errors_and_warnings_apart(tmp_path: Path) -> None:
    # 25 dead reads (warnings) and 25 reads whose garbage reaches an output (errors): one summary each
    n = 25
    live = tb(3, -1, -1, 0, *(step(k, "re", "s", 100 + k, "o", 0) for k in range(n)))
    text = allgather_with({0: tb(2, -1, -1, 0, *(step(k, "cpy", "s", k, "s", 50 + k) for k in range(n)))
                           + "\n" + live}, scratch=200)
    r = check(tmp_path, text)
    summaries = {(v.code, v.severity): v.message for v in r.violations if v.message.startswith("... and")}
    assert summaries[("dead-read", "warning")] == f"... and {n - 20} more dead-read finding(s)"
    assert summaries[("read-before-write", "error")] == f"... and {n - 20} more read-before-write finding(s)"
    assert r.verdict == "error"
