"""The program smtcoll checks is the one the runtimes' hand-written readers load (msccl_parser.cc of the
executor, xml.cc of the legacy runtime): each case is a spelling where an XML library reads something else,
with the runtime behaviour it models."""

from __future__ import annotations

from pathlib import Path

from helpers.xmlgen import algo, allgather2, gpu, step, tb, write

from smtcoll.check.program import check_program_file
from smtcoll.check.report import Report
from smtcoll.check.transmissions import lower
from smtcoll.msccl.reader import read_program_bytes
from smtcoll.msccl.runtime_reader import read_document


def check(tmp_path: Path, text: str, **kw) -> Report:
    return check_program_file(write(tmp_path, text), **kw)


def codes(report: Report, severity: str = "error") -> set[str]:
    return {v.code for v in report.violations if v.severity == severity}


def test_character_reference_in_an_integer_reaches_strtol_raw(tmp_path: Path) -> None:
    # values are copied byte for byte up to the next '"': strtol("&#49;") is 0, not 1
    text = allgather2().replace('dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>',
                                'dstoff="&#49;" cnt="1" depid="-1" deps="-1" hasdep="0"/>', 1)
    p = read_program_bytes(text.encode()).program
    assert 0 in [op.dstoff for g in p.gpus for t in g.tbs for op in t.steps if op.line and op.type == "r"]
    assert check(tmp_path, text).verdict == "error"


def test_character_reference_in_a_string_is_compared_raw(tmp_path: Path) -> None:
    # type="&#114;" is not "r" for strcmp: "type of transfer is not supported", refused
    text = allgather2().replace('type="r"', 'type="&#114;"', 1)
    r = check(tmp_path, text)
    assert r.verdict == "error" and r.runtimes == {"executor": False, "legacy": False}


def test_space_before_the_end_of_a_closing_tag_is_refused(tmp_path: Path) -> None:
    # the closing tag's name stops at the space; the reader then wants '>': "unexpected trailing ' '"
    r = check(tmp_path, allgather2().replace("</tb>", "</tb >", 1))
    assert r.verdict == "error" and "trailing" in " ".join(v.message for v in r.violations)


def test_child_of_a_step_crashes_the_reader(tmp_path: Path) -> None:
    # a step's children are read with a NULL handler table and nHandlers = 1: SIGSEGV on the owning rank
    text = allgather2().replace('hasdep="1"/>', 'hasdep="1"><note/></step>', 1)
    r = check(tmp_path, text)
    assert r.verdict == "error"
    assert any("crashes" in v.message for v in r.violations if v.severity == "error")


def test_nested_thread_block_is_skipped_with_its_subtree(tmp_path: Path) -> None:
    # a <tb> inside a <tb> is an unknown child there: skipped with its step; the outer tb keeps its later steps
    inner = '<tb id="9" send="-1" recv="-1" chan="0">' + step(0, "cpy", "i", 0, "o", 1) + "</tb>"
    text = allgather2().replace(step(0, "s", "o", 0, "o", 0, depid=0, deps=0),
                                step(0, "s", "o", 0, "o", 0, depid=0, deps=0) + inner, 1)
    p = read_program_bytes(text.encode()).program
    tb1 = next(t for t in p.gpus[0].tbs if t.id == 1)
    assert [op.type for op in tb1.steps] == ["s", "r"]
    assert not any(t.id == 9 for t in p.gpus[0].tbs)
    r = check(tmp_path, text)
    assert r.verdict == "ok" and "ignored-element" in codes(r, "warning")


def test_double_space_is_an_empty_attribute_not_an_error(tmp_path: Path) -> None:
    # each extra space is one more attribute with an empty name and value; 11 attributes still fit in 16
    r = check(tmp_path, allgather2().replace('type="r" ', 'type="r"  ', 1))
    assert r.verdict == "ok" and r.runtimes == {"executor": True, "legacy": True}


def test_extra_spaces_push_a_required_attribute_past_the_sixteenth(tmp_path: Path) -> None:
    # 10 attributes + 7 empty ones: hasdep is the 17th, dropped: "Attribute hasdep of node step not found"
    text = allgather2().replace('<step s="1" type="r"', '<step s="1"        type="r"', 1)
    r = check(tmp_path, text)
    assert r.verdict == "error" and r.runtimes == {"executor": False, "legacy": False}


def test_files_an_xml_library_cannot_read_are_judged_on_the_runtimes_program(tmp_path: Path) -> None:
    # duplicate attribute (the first wins), bare attribute (empty value), '< step' (an element with an empty
    # name, skipped), a second <algo> (the first is used): every runtime loads these files
    base = allgather2()
    dup = base.replace('type="r" srcbuf="o" srcoff="1"', 'type="r" srcbuf="o" srcoff="1" srcoff="7"', 1)
    r = check(tmp_path, dup)
    assert r.verdict == "ok" and "not-well-formed" in codes(r, "warning")
    second = base + base.replace('proto="Simple"', 'proto="LL"')
    r = check(tmp_path, second)
    assert r.verdict == "ok" and {"not-well-formed", "duplicate-algo"} <= codes(r, "warning")
    assert r.metrics["proto"] == "Simple"
    lt = base.replace('<step s="0" type="cpy"', '< step s="0" type="cpy"', 1)
    r = check(tmp_path, lt)  # rank 0 loses its copy: the output is wrong
    assert r.verdict == "error" and "not-well-formed" in codes(r, "warning")


def test_unknown_element_before_the_root_is_refused_by_the_executor_only(tmp_path: Path) -> None:
    # the executor reads only the first element for its metadata; legacy skips <header/> and loads <algo>
    r = check(tmp_path, "<header/>\n" + allgather2())
    assert r.runtimes == {"executor": False, "legacy": True}


def test_a_skipped_element_ends_at_the_first_closing_tag_whatever_its_name() -> None:
    # CDATA is read as an unknown open element: skipping it consumes the next step and </tb>
    text = allgather2().replace('hasdep="1"/>', 'hasdep="1"/><![CDATA[x]]>', 1)
    doc = read_document(text.encode())
    _, load0 = doc.gpus[0]
    assert load0.error is not None and "mismatch" in load0.error.message


# --- parse-time checks of the runtime's fixed arrays and fusion ----------------------------------------
def rank_with(tb1_steps: list[str], r: int, scratch: int = 20) -> str:
    return gpu(r, 1, 2, scratch, tb(0, -1, -1, 0, step(0, "cpy", "i", 0, "o", r, hasdep=1)),
               tb(1, -1, -1, 0, *tb1_steps))


def test_more_than_64_dependencies_overflow_the_executor_array(tmp_path: Path) -> None:
    # dependentBid/dependentStep have MSCCL_MAX_NUM_STEPS (64) entries in the executor, 256 in legacy
    steps = [*(step(k, "nop", depid=0, deps=0, cnt=0) for k in range(64)),
             step(63, "cpy", "o", 0, "s", 0, depid=0, deps=0)]
    text = algo(rank_with(steps, 0), rank_with([step(0, "cpy", "o", 1, "s", 0)], 1), ngpus=2)
    r = check(tmp_path, text)
    assert r.verdict == "error" and "array-overflow" in codes(r)
    assert "array-overflow" not in codes(check(tmp_path, text, runtime="legacy"))


def test_fused_chain_after_the_sixteenth_reduction_is_never_cut(tmp_path: Path) -> None:
    # the parser cuts a chain when the running count of reductions == 16: 16 single re steps into distinct
    # chunks, then 3 fusable ones give one transmission of 3 sources; a chain of 17 after that overflows
    singles = [step(k, "re", "s", k, "s", 19 - (k % 2)) for k in range(16)]
    chain = [step(16 + k, "re", "s", k, "o", 0) for k in range(17)]
    prog = rank_with(singles + chain, 0)
    tbs = read_program_bytes(algo(prog, rank_with([], 1)).encode()).program.gpus[0].tbs
    fused = [t for t in lower(tbs[1]) if t.dstbuf == "o"]
    assert len(fused) == 1 and len(fused[0].srcoffs) == 17
    r = check(tmp_path, algo(prog, rank_with([step(0, "nop", cnt=0)], 1)))
    assert "fusion-overflow" in codes(r)


def test_sixteen_source_fusion_drops_the_destination_with_simple_only(tmp_path: Path) -> None:
    # Simple's reduceCopy stops at 16 sources; the kernel appended the destination as the 17th
    chain = [step(k, "re", "s", k, "o", 0) for k in range(16)]
    simple = algo(rank_with(chain, 0), rank_with([step(0, "nop", cnt=0)], 1), proto="Simple")
    assert "fusion-drops-destination" in codes(check(tmp_path, simple))
    ll = simple.replace('proto="Simple"', 'proto="LL"')
    assert "fusion-drops-destination" not in codes(check(tmp_path, ll))


def test_fused_transmission_with_cnt_0_does_not_advance_the_step_counter() -> None:
    # `step += numReductions - 1` runs inside the per-piece loop, which a cnt=0 transmission never enters
    chain = [step(k, "re", "s", k, "o", 0, cnt=0) for k in range(3)] + [step(3, "cpy", "o", 0, "o", 1, hasdep=1)]
    tbs = read_program_bytes(algo(rank_with(chain, 0), rank_with([], 1)).encode()).program.gpus[0].tbs
    trans = lower(tbs[1])
    assert [t.counter for t in trans] == [0, 1]
    with_count = [step(k, "re", "s", k, "o", 0) for k in range(3)] + [step(3, "cpy", "o", 0, "o", 1, hasdep=1)]
    tbs = read_program_bytes(algo(rank_with(with_count, 0), rank_with([], 1)).encode()).program.gpus[0].tbs
    assert [t.counter for t in lower(tbs[1])] == [2, 3]
