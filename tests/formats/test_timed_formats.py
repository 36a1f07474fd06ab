"""Timed formats: TE-CCL flow JSON, TACCL algorithm JSON, transfer logs, ForestColl trees.

The fixture tests run `smtcoll verify` on the real files of ../shared/corpus/milp and compare with the
verdicts and claimed times of its labels.tsv; the other tests use the examples of docs/formats.md and
small files made here, good and bad."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from helpers.paths import CORPUS, ROOT, corpus_params, needs_corpus

from smtcoll import specs
from smtcoll.check.inputs import check_input_file
from smtcoll.formats import teccl_machines
from smtcoll.formats.inputs import detect

MILP = CORPUS / "milp"
EXAMPLES = ROOT / "examples" / "formats"
TOPOLOGIES = ROOT / "examples" / "topologies"


def _labels() -> list[dict[str, str]]:
    if not (MILP / "labels.tsv").is_file():
        return []
    with open(MILP / "labels.tsv", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def _verify(cli, *args: str) -> tuple[int, list[dict]]:
    r = cli("verify", "--format", "json", *args)
    assert r.returncode in (0, 1, 2), r.stderr
    return r.returncode, json.loads(r.stdout)


@needs_corpus()
@pytest.mark.parametrize("row", corpus_params(_labels(), MILP / "labels.tsv"),
                         ids=lambda r: r["file"].split("/")[-1][:50])
def test_fixture_verdicts_and_claims(cli, row):
    """`smtcoll verify FILE` gives labels.tsv's verdict, and the claimed time read from the file."""
    code, reports = _verify(cli, str(MILP / row["file"]))
    rep = reports[0]
    assert rep["verdict"] == row["truth"], [v["message"] for v in rep["violations"]][:5]
    assert code == (0 if row["truth"] == "ok" else 1)
    fmt = {"teccl-json": "teccl-json", "taccl-json": "taccl-json", "msccl-xml": "msccl-xml"}[row["format"]]
    assert rep["format"] == fmt
    assert rep["ranks"] == int(row["ranks"])
    if row["claimed_time_us"]:
        claimed = rep["time"]["claimed"]
        assert claimed["unit"] == "us"
        assert claimed["value"] == pytest.approx(float(row["claimed_time_us"]), rel=1e-6)


@needs_corpus()
def test_teccl_times_match_the_producers_model(cli):
    """Our replay in TE-CCL's epoch model reproduces the claims (803, 827, 848, 812 epochs); the
    alpha-beta replay is within 1% of the continuous replay of the study (4.008 us for DGX2 AllGather)."""
    files = ["dgx2x2_allgather_slow_1KB.json", "ndv2x2_allgather_slow_1KB.json", "ndv2x2_alltoall_slow_1KB.json",
             "dgx2x2_alltoall_slow_1KB.json"]
    _, reports = _verify(cli, *[str(MILP / "teccl" / f) for f in files])
    by = {Path(r["file"]).name: r for r in reports}
    for name, us in (("dgx2x2_allgather", 4.015), ("ndv2x2_allgather", 4.135), ("ndv2x2_alltoall", 4.24),
                     ("dgx2x2_alltoall", 4.06)):
        t = by[f"{name}_slow_1KB.json"]["time"]
        assert t["verified"]["value"] == pytest.approx(us, rel=1e-9)
        assert t["verified"]["model"].startswith("TE-CCL epochs")
        assert t["bound"]["value"] <= t["alpha_beta"]["value"]
    assert by["dgx2x2_allgather_slow_1KB.json"]["time"]["alpha_beta"]["value"] == pytest.approx(4.008, rel=0.01)
    assert by["ndv2x2_allgather_slow_1KB.json"]["time"]["alpha_beta"]["value"] == pytest.approx(4.121, rel=0.01)


@needs_corpus()
def test_teccl_ndv2_leaves_gpu0_out_30_deliveries(cli):
    _, (rep,) = _verify(cli, str(MILP / "teccl/ndv2x2_allgather_slow_1KB.json"))
    post = [v for v in rep["violations"] if v["code"] == "postcondition"]
    listed = [v for v in post if not v["message"].startswith("...")]
    more = [v for v in post if v["message"].startswith("...")]
    assert len(listed) + int(more[0]["message"].split()[2]) == 30
    assert all(v["where"]["gpu"] == 0 or "chunk 0" in v["message"] for v in listed)
    assert any(v["code"] == "bufferless-gpu" for v in rep["violations"])


@needs_corpus()
def test_teccl_mesh_is_fine_on_its_class_and_wrong_on_a_real_mesh(cli):
    f = str(MILP / "teccl/mesh_4.json")
    code, (rep,) = _verify(cli, f, "--topology", str(TOPOLOGIES / "teccl-mesh4-class.toml"))
    assert code == 0 and rep["verdict"] == "ok"
    code, (rep,) = _verify(cli, f, "--topology", str(TOPOLOGIES / "mesh4x4.toml"))
    missing = [v for v in rep["violations"] if v["code"] == "missing-link"]
    assert code == 1 and missing and all("flow" in v["where"] for v in missing if not v["message"].startswith("..."))
    total = len([v for v in missing if not v["message"].startswith("...")])
    total += sum(int(v["message"].split()[2]) for v in missing if v["message"].startswith("..."))
    assert total == 25  # 25 of the 240 flows use 3-4, 7-8 or 11-12


@needs_corpus()
def test_teccl_with_a_too_small_topology_is_unusable(cli):
    code, (rep,) = _verify(cli, str(MILP / "teccl/dgx2x2_allgather_slow_1KB.json"), "--topology", "ring:8")
    assert code == 2 and rep["verdict"] == "unusable"
    assert "node ids" in rep["violations"][0]["message"]


@needs_corpus()
def test_taccl_json_times_and_text_output(cli):
    f = str(MILP / "taccl/Alltoall.n8-MI300X-DUMB-MI300X-DUMB-steps2-tacclsol-improve-1736374135_taccl.sccl.json")
    _, (rep,) = _verify(cli, f)
    assert rep["time"]["claimed"]["value"] == 393.0
    assert rep["time"]["verified"]["value"] == pytest.approx(369.2)
    assert [v["code"] for v in rep["violations"]] == ["pessimistic-claim"]
    text = cli("verify", f, "-v").stdout
    assert "claimed 393 us" in text and "verified 369.2 us" in text and "bound" in text


@needs_corpus()
def test_taccl_overlapping_ib_sends_are_a_bandwidth_error(cli, tmp_path):
    """Move one IB send of step 1 to start while the same link is still busy with step 0."""
    src = MILP / "taccl/Alltoall.n8-MI300X-DUMB-MI300X-DUMB-steps2-tacclsol-improve-1736374135_taccl.sccl.json"
    data = json.loads(src.read_text())
    step0 = data["steps"][0]["sends"]
    ib = next(s for s in step0 if s[1] // 4 != s[2] // 4)
    data["steps"][0]["sends"].append([ib[0] + 0, ib[1], ib[2], 10, 0])  # again, 1 us later, same link
    data["steps"][0]["sends"][-1][0] = next(c for c in data["input_map"][str(ib[1])] if c != ib[0])
    f = tmp_path / "overlap_taccl.sccl.json"
    f.write_text(json.dumps(data))
    _, (rep,) = _verify(cli, str(f))
    assert any(v["code"] == "bandwidth" and "IB" in v["message"] for v in rep["violations"])


@needs_corpus()
def test_taccl_send_before_arrival_is_not_held(cli, tmp_path):
    src = MILP / "taccl/Alltoall.n8-MI300X-DUMB-MI300X-DUMB-steps2-tacclsol-improve-1736374135_taccl.sccl.json"
    data = json.loads(src.read_text())
    data["steps"][1]["sends"][0][3] = 0  # a relay's forward, moved to the start
    f = tmp_path / "early_taccl.sccl.json"
    f.write_text(json.dumps(data))
    _, (rep,) = _verify(cli, str(f))
    bad = [v for v in rep["violations"] if v["code"] == "not-held"]
    assert bad and bad[0]["where"] == {"send": 0, "step": 1}


# --- examples (docs/formats.md) -------------------------------------------------------------------

@pytest.mark.parametrize("name", ["allgather-ring4.csv", "allreduce-ring4.json", "teccl-allgather-mesh2.json",
                                  "taccl-allgather-2x2.sccl.json"])
def test_examples_verify(cli, name):
    code, (rep,) = _verify(cli, str(EXAMPLES / name))
    assert code == 0 and rep["verdict"] == "ok", rep["violations"]
    t = rep["time"]
    assert t["verified"]["unit"] == "us"
    if t["claimed"]:
        assert t["claimed"]["value"] == pytest.approx(t["verified"]["value"], rel=0.01)


def test_forestcoll_example(cli):
    code, (rep,) = _verify(cli, str(EXAMPLES / "forestcoll-allgather-ring4.xml"), "--topology",
                           str(EXAMPLES / "ring4.toml"))
    assert code == 0 and rep["format"] == "forestcoll-xml"
    t = rep["time"]
    # 2 chunks of 1 MiB on the busiest 50 GB/s link, plus a height-2 tree's latency of 2 x 0.5 us
    assert t["verified"]["value"] == pytest.approx(2 * 1048576 / 50e3 + 1.0, rel=1e-6)
    assert t["bound"]["value"] <= t["verified"]["value"] + 1e-9


def test_acausal_transfer_log_names_the_transfer(cli):
    code, (rep,) = _verify(cli, str(EXAMPLES / "allgather-ring4-acausal.csv"))
    assert code == 1
    codes = {v["code"] for v in rep["violations"]}
    assert {"not-held", "optimistic-claim", "bandwidth"} <= codes
    held = next(v for v in rep["violations"] if v["code"] == "not-held")
    assert held["where"] == {"line": 16}
    assert "rank 1 sends chunk 0 to rank 2 at 15 us" in held["message"]


def test_transfer_log_json_acausal_and_double_count(cli, tmp_path):
    (tmp_path / "ring4.toml").write_text((EXAMPLES / "ring4.toml").read_text())
    data = json.loads((EXAMPLES / "allreduce-ring4.json").read_text())
    data["transfers"][2]["start"] = 10  # rank 1 forwards before rank 2's value arrived: a partial sum
    data["transfers"][2]["end"] = 30.5
    f = tmp_path / "early.json"
    f.write_text(json.dumps(data))
    _, (rep,) = _verify(cli, str(f))
    assert rep["verdict"] == "error"
    assert any(v["code"] == "postcondition" for v in rep["violations"])
    data = json.loads((EXAMPLES / "allreduce-ring4.json").read_text())
    data["transfers"].append({"chunk": 0, "src": 1, "dst": 0, "start": 41, "end": 61.5})
    f.write_text(json.dumps(data))
    _, (rep,) = _verify(cli, str(f))
    dc = [v for v in rep["violations"] if v["code"] == "double-count"]
    assert dc and dc[0]["where"] == {"transfer": 6}


def test_transfer_log_reads_no_topology_outside_its_folder(tmp_path):
    f = tmp_path / "log.csv"
    f.write_text("# collective: allgather\n# topology: ../../etc/x.toml\nchunk,src,dst,start,end\n")
    rep = check_input_file(str(f))
    assert rep.verdict == "unusable" and "log's folder" in rep.violations[0].message


def test_transfer_log_bad_input_is_unusable_with_place(cli, tmp_path):
    f = tmp_path / "bad.csv"
    f.write_text("# collective: allgather\n# topology: ring:4\nchunk,src,dst,start,end\n0,0,1,zero,1\n")
    code, (rep,) = _verify(cli, str(f))
    assert code == 2 and "line 4" in rep["violations"][0]["message"] and "start" in rep["violations"][0]["message"]
    f.write_text("# collective: allgather\n# colective: x\nchunk,src,dst,start,end\n")
    code, (rep,) = _verify(cli, str(f))
    assert code == 2 and "colective" in rep["violations"][0]["message"]


def test_link_concurrency_follows_the_topology_bandwidth(tmp_path):
    """Two transfers at once on a link of bandwidth 2 are fine, on bandwidth 1 a bandwidth error."""
    rows = "chunk,src,dst,start,end\n0,0,1,0,1\n0,0,1,0,1\n1,1,0,0,1\n"
    for bw, ok in ((2, True), (1, False)):
        topo = tmp_path / f"t{bw}.toml"
        topo.write_text(f'[topology]\nname = "pair"\nranks = 2\nlinks = [{{src = 0, dst = 1, bandwidth = {bw}}}, '
                        '{src = 1, dst = 0}]\n')
        f = tmp_path / f"log{bw}.csv"
        f.write_text(f"# collective: allgather\n# topology: {topo.name}\n{rows}")
        rep = check_input_file(str(f))
        assert (rep.verdict == "ok") == ok, rep.violations


def test_switch_groups_bound_a_transfer_log(tmp_path):
    """hub-and-spoke: each rank sends one chunk at a time through its switch port."""
    f = tmp_path / "hub.csv"
    f.write_text("# collective: allgather\n# topology: hub-and-spoke:3\nchunk,src,dst,start,end\n"
                 "0,0,1,0,1\n0,0,2,0,1\n1,1,0,1,2\n1,1,2,2,3\n2,2,0,2,3\n2,2,1,3,4\n")
    rep = check_input_file(str(f))
    assert [v.code for v in rep.violations if v.severity == "error"] == ["bandwidth"]
    assert "switch group" in rep.violations[0].message


def test_forestcoll_bad_trees(tmp_path):
    text = (EXAMPLES / "forestcoll-allgather-ring4.xml").read_text()
    topo = specs.resolve_topology(str(EXAMPLES / "ring4.toml"))
    f = tmp_path / "t.xml"
    f.write_text(text.replace('<send src="1" dst="2" path="1,2"/>\n  </tree>', '</tree>', 1))  # tree 0 misses rank 2
    rep = check_input_file(str(f), topology=topo)
    assert rep.verdict == "error" and any(v.code == "postcondition" and v.where == {"gpu": 2} for v in rep.violations)
    f.write_text(text.replace('path="0,1"/>', 'path="0,1"/>\n    <send src="0" dst="2" path="0,2"/>', 1))
    rep = check_input_file(str(f), topology=topo)
    assert any(v.code == "missing-link" and v.where == {"tree": "0.0", "send": 1} for v in rep.violations)
    f.write_text(text.replace('nchunkspernode="1"', 'nchunkspernode="2"'))
    rep = check_input_file(str(f), topology=topo)
    assert any(v.code == "chunk-count" for v in rep.violations)


def test_teccl_small_bad_cases(tmp_path):
    data = json.loads((EXAMPLES / "teccl-allgather-mesh2.json").read_text())
    f = tmp_path / "t.json"
    # forwards moved one epoch early: two chunks on one link in one epoch (capacity 1 chunk per epoch)
    bad = dict(data, **{"7-Flows": [x.replace("in epoch 2", "in epoch 1") for x in data["7-Flows"]]})
    f.write_text(json.dumps(bad))
    rep = check_input_file(str(f))
    assert [v.code for v in rep.errors] == ["bandwidth"] * 4 and "1 chunks per epoch" in rep.errors[0].message
    # forwards moved to epoch 0: sent before they arrive (a chunk sent in epoch k is held from k + 1)
    bad = dict(data, **{"7-Flows": [x.replace("in epoch 2", "in epoch 0") for x in data["7-Flows"]]})
    f.write_text(json.dumps(bad))
    rep = check_input_file(str(f))
    held = [v for v in rep.errors if v.code == "not-held"]
    assert len(held) == 4 and all("flow" in v.where for v in held)
    # a claim of 2 epochs for a 3-epoch schedule
    f.write_text(json.dumps(dict(data, **{"3-Epochs_Required": 2, "4-Collective_Finish_Time": 2.0,
                                         "5-Algo_Bandwidth": 200.0})))
    rep = check_input_file(str(f))
    assert [v.code for v in rep.errors] == ["optimistic-claim"]
    assert rep.time["claimed"]["value"] == 2e6 and rep.time["verified"]["value"] == 3e6


def test_detection_and_input_format(cli):
    assert detect(str(EXAMPLES / "allgather-ring4.csv")) == "transfers-csv"
    assert detect(str(EXAMPLES / "forestcoll-allgather-ring4.xml")) == "forestcoll-xml"
    assert detect(str(EXAMPLES / "teccl-allgather-mesh2.json")) == "teccl-json"
    code, (rep,) = _verify(cli, str(EXAMPLES / "allgather-ring4.csv"), "--input-format", "teccl-json")
    assert code == 2 and rep["verdict"] == "unusable"
    r = cli("verify", str(EXAMPLES / "allgather-ring4.csv"), "--input-format", "nope")
    assert r.returncode == 2 and "--input-format" in r.stdout + r.stderr


def test_machine_files_match_the_builders():
    """examples/topologies/*.toml are the machines `verify` infers for TE-CCL files, link for link."""
    pairs = [("teccl-dgx2-2chassis.toml", teccl_machines.dgx2_2chassis()),
             ("teccl-ndv2-2chassis.toml", teccl_machines.ndv2(2)), ("mesh4x4.toml", teccl_machines.mesh(4)),
             ("teccl-mesh4-class.toml", teccl_machines.mesh(4, teccl_class=True))]
    for name, built in pairs:
        loaded = specs.resolve_topology(str(TOPOLOGIES / name))
        assert sorted(loaded.links, key=lambda lk: (lk.src, lk.dst)) == list(built.links), name
        assert sorted((g.srcs, g.dsts, g.bandwidth) for g in loaded.switches) == sorted(
            (g.srcs, g.dsts, g.bandwidth) for g in built.switches), name


@needs_corpus()
def test_a100_allpairs_alltoall_respects_the_nvswitch(cli):
    """7 x 1 MiB out of each GPU through 300 GB/s of NVSwitch take at least 24.5 us."""
    f = CORPUS / "msccl-xml/mscclang/alltoall_allpairs_8g_1i_Simple.xml"
    _, (rep,) = _verify(cli, str(f), "--topology", "a100")
    assert rep["time"]["alpha_beta"]["value"] >= 7 * 1048576 / 300e3
    assert rep["metrics"]["estimate"]["limited_by"].startswith("switch group")
    text = cli("verify", str(f), "--topology", "a100").stdout
    assert "alpha-beta 25.1" in text and "busiest switch groups" in text and "bound" in text


def _teccl_alltoall_mesh2(relay_epoch: int = 1) -> dict:
    """TE-CCL's LP dialect on a 2x2 mesh (100 GB chunks on 100 GB/s, tau 1 s): neighbours directly in
    epoch 0, diagonal pairs through a relay in epochs `relay_epoch` and 2."""
    routes = {(0, 3): 1, (3, 0): 2, (1, 2): 0, (2, 1): 3}
    paths, flows = {}, []
    for s in range(4):
        for d in range(4):
            if s == d:
                continue
            if (s, d) in routes:
                r = routes[(s, d)]
                hops = [(relay_epoch, s, r), (2, r, d)]
            else:
                hops = [(0, s, d)]
            key = f"Demand at {d} for chunk {d} from {s} met by epoch {hops[-1][0]}"
            paths[key] = [[[e, f"{i}->{j} with volume 1.0 in epoch {e}"] for e, i, j in hops]]
            flows += [f"Chunk {d} from {s} traveled over {i}->{j} with volume 1.0 in epoch {e}" for e, i, j in hops]
    return {"1-Epoch_Duration": 1.0, "2-Expected_Epoch_Duration": 1.0, "3-Epochs_Required": 3,
            "4-Collective_Finish_Time": 3.0, "5-Algo_Bandwidth": 400 / 3, "7-Flows": sorted(flows),
            "8-Chunk paths": paths, "Solver_Time": 0.0}


def test_teccl_alltoall_lp_dialect(tmp_path):
    f = tmp_path / "a2a.json"
    f.write_text(json.dumps(_teccl_alltoall_mesh2()))
    rep = check_input_file(str(f))
    assert rep.verdict == "ok" and rep.format == "teccl-json" and rep.collective == "alltoall", rep.violations
    assert rep.time["verified"]["value"] == 3e6 and rep.time["claimed"]["value"] == 3e6
    # the relay forwards in the epoch its volume arrives (usable only from the next): not held
    f.write_text(json.dumps(_teccl_alltoall_mesh2(relay_epoch=2)))
    rep = check_input_file(str(f))
    assert [v.code for v in rep.errors] == ["not-held"] * 4
    held = rep.errors[0]
    assert set(held.where) == {"path", "hop"} and held.where["hop"] == 1


def test_teccl_slow_link_window(tmp_path):
    """A 50 GB/s link with 100 GB chunks and 1 s epochs carries half a chunk per epoch (b = 1): a chunk
    needs two epochs, and two chunks in two consecutive epochs overload it."""
    topo = tmp_path / "pair.toml"
    topo.write_text('[topology]\nname = "pair"\nranks = 2\nlinks = [{src = 0, dst = 1, gbps = 100.0}, '
                    '{src = 1, dst = 0, gbps = 50.0}]\n')

    def teccl(flows: list[str], epochs: int) -> str:
        return json.dumps({"1-Epoch_Duration": 1.0, "2-Expected_Epoch_Duration": 1.0, "3-Epochs_Required": epochs,
                           "4-Collective_Finish_Time": float(epochs), "5-Algo_Bandwidth": 2 * 100 / epochs,
                           "7-Flows": flows, "Solver_Time": 0.0})

    f = tmp_path / "t.json"
    both = ["Chunk 0 from 0 traveled over 0->1 in epoch 0", "Chunk 0 from 1 traveled over 1->0 in epoch 0"]
    f.write_text(teccl(both, 2))
    code_ok = check_input_file(str(f), topology=specs.resolve_topology(str(topo)))
    assert code_ok.verdict == "ok" and code_ok.time["verified"]["value"] == 2e6, code_ok.violations
    f.write_text(teccl(both, 1))
    rep = check_input_file(str(f), topology=specs.resolve_topology(str(topo)))
    assert [v.code for v in rep.errors] == ["optimistic-claim"]
    f.write_text(teccl(["Chunk 0 from 0 traveled over 0->1 in epoch 0", "Chunk 1 from 0 traveled over 0->1 in epoch 1",
                        "Chunk 0 from 1 traveled over 1->0 in epoch 0",
                        "Chunk 1 from 1 traveled over 1->0 in epoch 1"], 3))
    rep = check_input_file(str(f), topology=specs.resolve_topology(str(topo)))
    bad = [v for v in rep.errors if v.code == "bandwidth"]
    assert len(bad) == 1 and "1->0" in bad[0].message and "window of 2" in bad[0].message


def _taccl_split(data: dict, factor: int) -> dict:
    """The same TACCL algorithm with every chunk in `factor` pieces, as TACCL writes it: its collective is
    built with the chunk factor, so the chunk list, input_map and output_map name the pieces (chunk c
    becomes c*factor + j), `instance.chunks` = factor, and each send becomes `factor` sends of the pieces,
    one after the other on the same link (times scaled so that the pieces fit where the chunk went)."""
    from smtcoll.formats import schedules, taccl
    ts = taccl.read_taccl(data, schedules.sccl_collective(data), None)
    out = json.loads(json.dumps(data))
    out["instance"]["chunks"] = factor
    out["collective"]["chunks"] = [dict(ch, addr=c * factor + j) for c, ch in enumerate(data["collective"]["chunks"])
                                   for j in range(factor)]
    for key in ("input_map", "output_map"):
        out[key] = {r: [c * factor + j for c in cs for j in range(factor)] for r, cs in data[key].items()}
    k = 0
    for step in out["steps"]:
        step["rounds"] *= factor
        sends = []
        for c, s, d, t, link, *rest in step["sends"]:
            tr = ts.transfers[k]
            k += 1
            dur = float((tr.end - tr.start) * taccl.SCALE_TIME)
            sends += [[c * factor + j, s, d, factor * t + j * dur, link, *rest] for j in range(factor)]
        step["sends"] = sends
    return out


def test_taccl_chunk_list_is_already_split(tmp_path):
    # TACCL lists the split chunks: reading them must not split them again (issue 20, class 4)
    data = json.loads((EXAMPLES / "taccl-allgather-2x2.sccl.json").read_text())
    f = tmp_path / "split_taccl.sccl.json"
    f.write_text(json.dumps(_taccl_split(data, 2)))
    r = check_input_file(str(f))
    assert r.verdict == "ok", [v.to_json() for v in r.errors]
    assert r.metrics["transfers"] == 2 * sum(len(s["sends"]) for s in data["steps"])


@needs_corpus(CORPUS / "sccl-json")
def test_sccl_chunk_list_is_split_by_the_instance(tmp_path):
    # SCCL (msccl-tools) lists the base chunks; its sends and maps name the split addresses
    from smtcoll.formats.schedules import parse_schedule
    src = CORPUS / "sccl-json" / "Allgather.n4-Ring.n4-steps2.rounds3.chunks2.msccl.json"
    s = parse_schedule(src.read_text())
    assert s.collective.chunks == 8 and s.collective.chunk_factor == 2


def test_taccl_send_exactly_at_arrival_is_held(tmp_path):
    # TACCL's rule: a send starts at t / 10 and an IB send arrives alpha + k beta later. With t = 1,
    # alpha = beta = 0.1, the chunk arrives at 0.1 + 0.1 + 0.1 = 0.3 exactly, and the next send starts at
    # 3 / 10 = 0.3: held (as floats the sum is 0.30000000000000004 > 0.3; issue 20, class 6)
    data = json.loads((EXAMPLES / "taccl-allgather-2x2.sccl.json").read_text())
    data["topology"].update(node_invbws=[[0, 0.1], [0.1, 0]], remote_alpha=0.1, remote_beta=0.1)
    first, second = data["steps"]
    first["rounds"], second["rounds"] = 3, 1
    for send in first["sends"]:
        send[3] = 1
    for send in second["sends"]:
        send[3] = 3
    f = tmp_path / "exact_taccl.sccl.json"
    f.write_text(json.dumps(data))
    r = check_input_file(str(f))
    assert r.verdict == "ok", [v.to_json() for v in r.errors]
    assert r.time["verified"]["value"] == 0.4
    # a little earlier is before the arrival: refused
    for send in second["sends"]:
        send[3] = 2.99
    f.write_text(json.dumps(data))
    assert "not-held" in {v.code for v in check_input_file(str(f)).errors}


def _speed_log(tmp_path, duration: str, extra: str = "", links: str = "") -> Path:
    """An allgather on two ranks joined by 50 GB/s links: 1 MB chunks need 20 us each."""
    topo = tmp_path / "pair.toml"
    topo.write_text('[topology]\nname = "pair"\nranks = 2\ngbps = 50.0\n'
                    + (links or 'links = [{src = 0, dst = 1}, {src = 1, dst = 0}]\n'))
    f = tmp_path / "speed.csv"
    f.write_text(f"# collective: allgather\n# topology: {topo.name}\n# unit: us\n# chunk_bytes: 1000000\n"
                 f"chunk,src,dst,start,end\n0,0,1,0,{duration}\n1,1,0,0,{duration}\n{extra}")
    return f


def test_transfer_faster_than_its_link_is_a_bandwidth_error(tmp_path):
    # 1 MB over 50 GB/s takes 20 us: in 10 us it would need 100 GB/s (issue 20, class 3)
    rep = check_input_file(str(_speed_log(tmp_path, "10")))
    fast = [v for v in rep.errors if v.code == "bandwidth"]
    assert fast and "100 GB/s" in fast[0].message and fast[0].where == {"line": 6}
    # exactly at the link's speed, or slower: fine
    assert check_input_file(str(_speed_log(tmp_path, "20"))).verdict == "ok"
    assert check_input_file(str(_speed_log(tmp_path, "25.5"))).verdict == "ok"
    # in ms: 0.01 ms = 10 us, too fast again
    f = _speed_log(tmp_path, "0.01")
    f.write_text(f.read_text().replace("# unit: us", "# unit: ms"))
    assert "bandwidth" in {v.code for v in check_input_file(str(f)).errors}


def test_transfers_sharing_a_link_share_its_speed(tmp_path):
    # a link of bandwidth 2 carries two transfers at once, but both together at most at its 100 GB/s
    # (50 GB/s per unit of bandwidth)
    links = 'links = [{src = 0, dst = 1, bandwidth = 2}, {src = 1, dst = 0}]\n'
    slow = _speed_log(tmp_path, "20", "0,0,1,0,20\n", links)
    assert check_input_file(str(slow)).verdict == "ok"
    fast = _speed_log(tmp_path, "20", "0,0,1,0,15\n", links)
    assert "bandwidth" in {v.code for v in check_input_file(str(fast)).errors}


def _teccl_fast_run(tmp_path, output_gb: float, multiplier: int) -> tuple[Path, object]:
    """A TE-CCL AllGather on two GPUs joined by 100 GB/s links, made as TE-CCL's input generator makes its
    runs (teccl/examples/json_gen.py): chunk = output / GPUs, epoch = `multiplier` chunk times over the
    fastest link. Each GPU sends its 3 chunks in epoch 0; the link carries `multiplier` per epoch."""
    topo = tmp_path / "pair100.toml"
    topo.write_text('[topology]\nname = "pair100"\nranks = 2\ngbps = 100.0\nlinks = [{src = 0, dst = 1}, '
                    '{src = 1, dst = 0}]\n')
    chunk = output_gb / 2
    tau = multiplier * chunk / 100.0
    flows = [f"Chunk {c} from {s} traveled over {s}->{1 - s} in epoch 0" for s in (0, 1) for c in range(3)]
    f = tmp_path / "fast.json"
    f.write_text(json.dumps({"1-Epoch_Duration": tau, "2-Expected_Epoch_Duration": tau, "3-Epochs_Required": 1,
                             "4-Collective_Finish_Time": tau, "5-Algo_Bandwidth": output_gb / tau,
                             "7-Flows": flows, "Solver_Time": 0.0}))
    return f, specs.resolve_topology(str(topo))


def test_teccl_fast_small_runs_use_epoch_multiplier_4(tmp_path):
    # 4 KB Fast run: the generator's epoch is 4 chunk times. The numbers also fit "2 chunk times of a chunk
    # twice as large" (half the GPUs), under which the link would carry only 2 chunks per epoch: the
    # generator's rule decides (issue 20, class 5)
    f, topo = _teccl_fast_run(tmp_path, 4e-6, 4)
    rep = check_input_file(str(f), topology=topo)
    assert rep.verdict == "ok", [v.to_json() for v in rep.errors]
    assert rep.metrics["chunk_bytes"] == pytest.approx(2000)
    # a 16 KB Fast run has multiplier 1: the same numbers scaled are 4 chunk times, which the generator
    # never writes for it; the readings disagree, so the smaller chunk is taken with a warning
    f, topo = _teccl_fast_run(tmp_path, 16e-6, 4)
    rep = check_input_file(str(f), topology=topo)
    assert rep.verdict == "ok" and rep.metrics["chunk_bytes"] == pytest.approx(8000)
    assert any(v.code == "chunk-size" and v.severity == "warning" for v in rep.violations)


def test_teccl_generator_multiplier_follows_json_gen():
    from smtcoll.formats.teccl import generator_multiplier
    assert [generator_multiplier("fast", kb * 1e-6) for kb in (1, 4, 16)] == [4, 4, 1]
    assert [generator_multiplier("slow", kb * 1e-6) for kb in (1, 4)] == [2, 1]


def test_a_shared_switch_group_bounds_the_sum_of_rates(tmp_path):
    # ranks 0 and 1 reach rank 2 through one switch group (a shared NIC) of 2 x 50 GB/s; each link runs at
    # 100 GB/s. Two 1 MB transfers at once: at 62.5 GB/s each (16 us) the links hold them but the group
    # (125 > 100 GB/s) does not; at 50 GB/s each (20 us) both do
    topo = tmp_path / "nic.toml"
    topo.write_text('[topology]\nname = "nic"\nranks = 3\ngbps = 50.0\n'
                    'links = [{src = 0, dst = 2, bandwidth = 2}, {src = 1, dst = 2, bandwidth = 2}]\n'
                    '[[topology.switches]]\nsrcs = [0, 1]\ndsts = [2]\nbandwidth = 2\nname = "nic2"\n')
    for duration, fast in (("16", True), ("20", False)):
        f = tmp_path / f"nic{duration}.csv"
        f.write_text(f"# collective: allgather\n# topology: nic.toml\n# unit: us\n# chunk_bytes: 1000000\n"
                     f"chunk,src,dst,start,end\n0,0,2,0,{duration}\n1,1,2,0,{duration}\n")
        speed = [v for v in check_input_file(str(f)).errors if v.code == "bandwidth"]
        assert bool(speed) == fast, speed
        assert all("switch group nic2" in v.message and "GB/s" in v.message for v in speed)
