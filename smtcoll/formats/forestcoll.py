"""ForestColl spanning-tree files (docs/formats.md), read into a timed schedule.

`<Algo nchunkspernode="k">` holds `<tree root="u" index="i" nchunks="C" height="h">` elements, each with
`<send src="a" dst="b" path="a,...,b"/>` tree edges in breadth-first order (`path` names the switches the
edge crosses). Every rank's data is split into k chunks; the trees rooted at u carry C of them each
(together k), and every tree spans all ranks: an AllGather. A tree edge is one link of our topology (a
path through switches is a link bounded by switch groups).

Cost model (ForestColl's): the trees are pipelined, so the time is set by the busiest link, load_e x
chunk / rate_e, where load_e is the chunks all trees send over e (switch groups count the same way),
plus the latency of the deepest tree (its height x the largest alpha of its links). The
file states no time; the chunk is `NODE_BYTES` / k. In the replay, tree level d sends in [d, d + 1).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

from smtcoll import library
from smtcoll.errors import ModelError
from smtcoll.formats.numbers import ascii_int
from smtcoll.formats.source import Source, xml_root
from smtcoll.limits import max_transfers, transfers_exceeded
from smtcoll.model import Topology
from smtcoll.model.timed import Finding, Quantity, TimedSchedule, Transfer, group_gbps
from smtcoll.text import count

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

FORMAT = "forestcoll-xml"
NODE_BYTES = 1 << 20  # data per rank for the time in ForestColl's model (the XML states no size)
MAX_ELEMENTS = 1_000_000


class ForestError(Exception):
    def __init__(self, where: str, message: str) -> None:
        self.where, self.message = where, message


def is_forestcoll(text: str) -> bool:
    head = text.lstrip()[:200]
    return head.startswith("<Algo") or ("<Algo " in head and "nchunkspernode" in head)


def _int(e: Element, key: str, where: str, low: int = 0) -> int:
    v = e.get(key)
    x = ascii_int(v)
    if x is None or x < low:
        raise ForestError(where, f"{key}: expected an integer >= {low}, got {str(v)[:60]!r}")
    return x


def read_forestcoll(text: str, topology: Topology | None, name: str = "") -> TimedSchedule:
    if topology is None:
        raise ForestError("", "a ForestColl tree file holds no topology: give the machine with --topology")
    from defusedxml import ElementTree as SafeET  # here: ElementTree is start-up every `verify` would pay

    try:
        root = SafeET.fromstring(text)
    except SafeET.ParseError as e:
        raise ForestError(f"line {e.position[0]}", f"not well-formed XML: {e}") from None
    except Exception as e:  # defusedxml refuses entities and DTDs
        raise ForestError("", f"refused: {type(e).__name__}") from None
    if root.tag != "Algo":
        raise ForestError("", f"expected <Algo>, got <{root.tag}>")
    k = _int(root, "nchunkspernode", "<Algo>", 1)
    n = topology.ranks
    coll = library.collective("allgather", n, chunks=k)
    findings: list[Finding] = []
    transfers: list[Transfer] = []
    per_root: Counter[int] = Counter()
    offset: Counter[int] = Counter()
    load: Counter[tuple[int, int]] = Counter()
    latency = 0.0
    trees = [t for t in root if t.tag == "tree"]
    if sum(1 + len(t) for t in trees) > MAX_ELEMENTS:
        raise ForestError("", f"more than {MAX_ELEMENTS} elements")
    for ti, tree in enumerate(trees):
        tw = f"tree[{ti}]"
        u, idx = _int(tree, "root", tw), _int(tree, "index", tw)
        c, height = _int(tree, "nchunks", tw, 1), _int(tree, "height", tw)
        if u >= n:
            raise ForestError(tw, f"root {u}: rank out of range (topology has {n} ranks)")
        tree_name = f"{u}.{idx}"
        per_root[u] += c
        first = offset[u]
        offset[u] += c
        depth = {u: 0}
        edges = []
        for si, send in enumerate(x for x in tree if x.tag == "send"):
            sw = f"{tw}.send[{si}]"
            a, b = _int(send, "src", sw), _int(send, "dst", sw)
            path = (send.get("path") or "").split(",")
            if path[0].strip() != str(a) or path[-1].strip() != str(b):
                findings.append(Finding("bad-path", f"path {send.get('path')!r} does not run from {a} to {b}",
                                        "error", {"tree": tree_name, "send": si}))
            level = depth.get(a)
            if level is None:  # the parent's edge comes later or never: a tree in BFS order has it first
                level = len(trees) + n
            depth.setdefault(b, level + 1)
            load[(a, b)] += c
            edges.append((a, b))
            moved = max(0, min(c, k - first))  # chunks beyond nchunkspernode are reported as chunk-count
            if len(transfers) + moved > max_transfers():  # chunk moves (nchunks x edges): the replay's work
                raise ForestError(sw, transfers_exceeded(f"more than {max_transfers()}"))
            for j in range(moved):
                transfers.append(Transfer(u * k + first + j, a, b, level, level + 1, {"tree": tree_name, "send": si}))
        deepest = max(depth.values())
        alphas = [lk.alpha_us or 0.0 for a, b in edges for lk in [topology.link(a, b)] if lk is not None]
        latency = max(latency, deepest * max(alphas, default=0.0))
        if deepest != height and deepest < n:
            findings.append(Finding("bad-height", f"tree {tree_name} declares height {height} but is {deepest} deep",
                                    "warning", {"tree": tree_name}))
    for u in range(n):
        if per_root[u] != k:
            findings.append(Finding("chunk-count", f"the trees rooted at rank {u} carry {count(per_root[u], 'chunk')}; "
                                                   f"nchunkspernode is {k}", "error", {"gpu": u}))
    chunk_bytes = NODE_BYTES / k
    model_time = _pipelined_time(topology, load, chunk_bytes, latency)
    try:
        return TimedSchedule(FORMAT, "ForestColl pipelined trees", coll, topology, transfers, "level", None, (),
                             None, chunk_bytes, findings=findings, name=name, model_time=model_time)
    except ModelError as e:
        raise ForestError(e.where, e.detail) from None


def _pipelined_time(topo: Topology, load: Counter[tuple[int, int]], chunk_bytes: float,
                    latency: float) -> Quantity | None:
    worst, where = 0.0, ""
    for (a, b), chunks in sorted(load.items()):
        lk = topo.link(a, b)
        if lk is None:
            continue
        if not lk.gbps:
            return None
        t = chunks * chunk_bytes / (lk.gbps * 1e3)
        if t > worst:
            worst, where = t, f"link {a}->{b}"
    for g, grp in enumerate(topo.switches):
        chunks = sum(v for (a, b), v in load.items() if a in grp.srcs and b in grp.dsts)
        rate = group_gbps(topo, grp)
        if not chunks or not rate:
            continue
        t = chunks * chunk_bytes / (rate * 1e3)
        if t > worst:
            worst, where = t, f"switch group {grp.name or g}"
    if worst == 0:
        return None
    return Quantity(round(worst + latency, 6), "us", "ForestColl pipelined trees",
                    f"busiest: {where}; {NODE_BYTES} B per rank; latency {latency:.6g} us")



# The `Format` protocol (smtcoll.formats.registry).
NAME = FORMAT
SUFFIXES: tuple[str, ...] = ()
_ROOT = re.compile(r"\s*<Algo\s[^>]*nchunkspernode")
ERRORS: tuple[type[Exception], ...] = (ForestError,)


def detect(source: Source) -> bool:
    head = source.head
    return head.startswith("<") and is_forestcoll(skip_prolog(head))


def claims(source: Source) -> bool:
    """A `.xml` file whose root element is ForestColl's `<Algo ... nchunkspernode>`."""
    return source.suffix == ".xml" and _ROOT.match(xml_root(source.sniff())) is not None


def skip_prolog(text: str) -> str:
    """The text after an XML declaration and comments."""
    while text.startswith("<?") or text.startswith("<!--"):
        end = text.find("?>" if text.startswith("<?") else "-->")
        if end < 0:
            return text
        text = text[end + (2 if text.startswith("<?") else 3):].lstrip()
    return text


def read(source: Source, topology: Topology | None) -> TimedSchedule:
    return read_forestcoll(source.text(), topology, source.name)
