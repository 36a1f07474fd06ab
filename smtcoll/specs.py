"""Spec files (TOML): topologies and collectives, read with errors that name file, line and field.

A spec file is data, never code; expressions are parsed by `smtcoll.expr`. See docs/specs.md.
"""

from __future__ import annotations

import contextvars
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smtcoll import library
from smtcoll.errors import InputError, ModelError
from smtcoll.model import Collective, Link, Nic, SwitchGroup, Topology

if TYPE_CHECKING:
    import tomllib

MAX_SPEC_BYTES = 16 * 1024 * 1024

TOPOLOGY_KEYS = {"name", "ranks", "links", "adjacency", "generator", "node", "nodes", "switches", "nics",
                 "alpha_us", "gbps", "description"}
LINK_KEYS = {"src", "dst", "bandwidth", "alpha_us", "gbps"}
SWITCH_KEYS = {"srcs", "dsts", "bandwidth", "name"}
NIC_KEYS = {"senders", "receivers", "bandwidth", "rail", "alpha_us", "gbps"}
COLLECTIVE_KEYS = {"name", "rooted", "chunks", "pre", "post", "address", "ranks", "root", "chunk_factor",
                   "description"}


class _Located(Exception):
    """A field error inside the data: `where` is the dotted path."""

    def __init__(self, where: str, message: str) -> None:
        self.where, self.message = where, message


def read_toml(path: Path) -> tuple[dict[str, Any], str]:
    try:
        size = path.stat().st_size
        if size > MAX_SPEC_BYTES:
            raise InputError(str(path), f"file is {size} bytes; spec files are limited to {MAX_SPEC_BYTES}")
        raw = path.read_bytes()
    except OSError as e:
        raise InputError(str(path), f"cannot read: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(str(path), f"not UTF-8 text (byte {e.start})") from None
    _refuse_long_keys(text, str(path))
    import tomllib  # here, as tomli_w below: start-up of every command that reads no spec file

    try:
        return tomllib.loads(text), text
    except ValueError as e:  # an integer of more than 4300 digits (CPython's int-to-str limit)
        if isinstance(e, tomllib.TOMLDecodeError):
            raise _toml_error(e, str(path)) from None
        m = re.search(r"[0-9_]{4301,}", text)
        raise InputError(str(path), "a number of more than 4300 digits",
                         text.count("\n", 0, m.start()) + 1 if m else None) from None
    except RecursionError:
        raise InputError(str(path), "not valid TOML: nested too deeply") from None


# tomllib's cost grows with the square of a dotted key's parts (100,000 parts: 30 s, 3.7 GB); no spec needs
# more than a few, so a key of more than MAX_KEY_PARTS parts is refused before tomllib sees it.
MAX_KEY_PARTS = 64
_STRING_OR_COMMENT = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*')
_DOTTED = re.compile(rf"(?:[\w-]+[ \t]*\.[ \t]*){{{MAX_KEY_PARTS},}}")


def _refuse_long_keys(text: str, path: str) -> None:
    if text.count(".") < MAX_KEY_PARTS:
        return
    # strings become `s` (keeping their newlines, for the line number), comments disappear
    bare = _STRING_OR_COMMENT.sub(lambda m: "" if m.group().startswith("#") else "s" + "\n" * m.group().count("\n"),
                                  text)
    m = _DOTTED.search(bare)
    if m:
        raise InputError(path, f"a dotted key of more than {MAX_KEY_PARTS} parts; spec files nest a few levels",
                         bare.count("\n", 0, m.start()) + 1)


def _toml_error(e: tomllib.TOMLDecodeError, path: str) -> InputError:
    m = re.search(r"\(at line (\d+), column (\d+)\)", str(e))
    msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(e))
    if m:
        return InputError(path, f"column {m.group(2)}: not valid TOML: {msg}", int(m.group(1)))
    return InputError(path, f"not valid TOML: {msg}")


def _line_of(text: str, where: str) -> int | None:
    """Best-effort line of a field path such as `links[3].dst` or `switches[0]`."""
    m = re.match(r"([A-Za-z_]+)(?:\[(\d+)\])?", where)
    if not m:
        return None
    key, index = m.group(1), m.group(2)
    lines = text.splitlines()
    if index is not None:
        headers = [i for i, line in enumerate(lines) if re.match(rf"\s*\[\[\s*[\w.]*\b{key}\s*\]\]", line)]
        if len(headers) > int(index):
            return headers[int(index)] + 1
    for i, line in enumerate(lines):
        if re.match(rf"\s*{key}\s*=", line) or re.match(rf"\s*\[+\s*([\w.]*\.)?{key}\s*\]+", line):
            return i + 1
    return None


def _fail(path: str, text: str, where: str, message: str) -> InputError:
    return InputError(path, f"{where}: {message}" if where else message, _line_of(text, where) if where else None)


# --- typed field access --------------------------------------------------------------------------

def _table(data: Any, where: str, keys: set[str]) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise _Located(where, f"expected a table, got {_kind(data)}")
    unknown = sorted(set(data) - keys)
    if unknown:
        raise _Located(f"{where}.{unknown[0]}" if where else unknown[0],
                       f"unknown key (allowed: {', '.join(sorted(keys))})")
    return data


def _kind(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
            dict: "a table"}.get(type(value), type(value).__name__)


def _get_int(data: dict, key: str, where: str, default: Any = ..., low: int | None = None) -> Any:
    if key not in data:
        if default is ...:
            raise _Located(f"{where}{key}", "missing")
        return default
    value = data[key]
    if not isinstance(value, int) or isinstance(value, bool):
        raise _Located(f"{where}{key}", f"expected an integer, got {_kind(value)}")
    if low is not None and value < low:
        raise _Located(f"{where}{key}", f"= {value}: must be >= {low}")
    return value


def _get_num(data: dict, key: str, where: str) -> float | None:
    if key not in data:
        return None
    value = data[key]
    if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0 or value == float("inf"):
        raise _Located(f"{where}{key}", f"expected a positive number, got {value!r}")
    return float(value)


def _get_str(data: dict, key: str, where: str, default: Any = ...) -> Any:
    if key not in data:
        if default is ...:
            raise _Located(f"{where}{key}", "missing")
        return default
    if not isinstance(data[key], str):
        raise _Located(f"{where}{key}", f"expected a string, got {_kind(data[key])}")
    return data[key]


def _int_list(data: dict, key: str, where: str) -> list[int]:
    value = data.get(key)
    if not isinstance(value, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in value):
        raise _Located(f"{where}{key}", "expected an array of integers")
    return value


def _array_of_tables(data: dict, key: str) -> list[dict]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise _Located(key, f"expected an array of tables, got {_kind(value)}")
    return value


# --- topologies ----------------------------------------------------------------------------------

def topology_from_dict(data: Any, base: Path | None = None) -> Topology:
    """Build a topology from the `[topology]` table; raises ModelError with the field path."""
    try:
        return _topology(data, base)
    except _Located as e:
        raise ModelError(e.where, e.message) from None


def _topology(data: Any, base: Path | None) -> Topology:
    t = _table(data, "", TOPOLOGY_KEYS)
    forms = [k for k in ("links", "adjacency", "generator", "node") if k in t]
    if len(forms) != 1:
        raise _Located("", "give exactly one of links, adjacency, generator or node "
                           f"(found {', '.join(forms) or 'none'})")
    form = forms[0]
    alpha = _get_num(t, "alpha_us", "")
    gbps = _get_num(t, "gbps", "")
    name = _get_str(t, "name", "", "")
    switches: list[SwitchGroup] = []
    nics: list[Nic] = []
    if form == "links":
        ranks = _get_int(t, "ranks", "", low=1)
        if ranks > library.MAX_RANKS:
            raise _Located("ranks", f"= {ranks}: at most {library.MAX_RANKS} ranks")
        links = []
        for i, l in enumerate(_array_of_tables(t, "links")):
            w = f"links[{i}]."
            l = _table(l, f"links[{i}]", LINK_KEYS)
            bw = _get_int(l, "bandwidth", w, 1)
            link_gbps = _get_num(l, "gbps", w)
            links.append(Link(_get_int(l, "src", w), _get_int(l, "dst", w), bw,
                              _get_num(l, "alpha_us", w) or alpha,
                              link_gbps if link_gbps is not None else (gbps * bw if gbps and isinstance(bw, int)
                                                                       else None)))
        topo = Topology(name or "custom", ranks, links)
    elif form == "adjacency":
        matrix = t["adjacency"]
        if not isinstance(matrix, list) or not matrix or len(matrix) > library.MAX_RANKS:
            raise _Located("adjacency", f"expected a square array of arrays of integers (at most "
                                        f"{library.MAX_RANKS} rows)")
        n = len(matrix)
        for i, row in enumerate(matrix):
            if not isinstance(row, list) or len(row) != n:
                raise _Located(f"adjacency[{i}]", f"expected an array of {n} integers (the matrix must be square)")
            for j, v in enumerate(row):
                if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                    raise _Located(f"adjacency[{i}][{j}]", f"expected an integer >= 0, got {v!r}")
                if i == j and v:
                    raise _Located(f"adjacency[{i}][{j}]", f"= {v}: self link {i} -> {i}")
        if "ranks" in t and _get_int(t, "ranks", "") != n:
            raise _Located("ranks", f"= {t['ranks']}, but the adjacency matrix has {n} rows")
        topo = Topology(name or "custom", n, library.adjacency_links(matrix, alpha, gbps))
    elif form == "generator":
        gen = _get_str(t, "generator", "")
        try:
            topo = library.topology(gen)
        except ModelError as e:
            raise _Located("generator", e.detail) from None
        if alpha or gbps:
            topo = Topology(topo.name, topo.ranks, [Link(l.src, l.dst, l.bandwidth, alpha or l.alpha_us,
                                                         gbps * l.bandwidth if gbps else l.gbps)
                                                    for l in topo.links], topo.switches, topo.nics)
        if name:
            topo = Topology(name, topo.ranks, topo.links, topo.switches, topo.nics)
        if "ranks" in t and _get_int(t, "ranks", "") != topo.ranks:
            raise _Located("ranks", f"= {t['ranks']}, but {gen} has {topo.ranks} ranks")
    else:
        node = _get_str(t, "node", "")
        try:
            if node.endswith(".toml"):
                topo = load_topology((base or Path(".")) / node)
            else:
                topo = library.topology(node)
        except (ModelError, InputError) as e:
            raise _Located("node", str(e)) from None
    switches = list(topo.switches)
    for i, raw in enumerate(_array_of_tables(t, "switches")):
        s = _table(raw, f"switches[{i}]", SWITCH_KEYS)
        w = f"switches[{i}]."
        switches.append(SwitchGroup(_int_list(s, "srcs", w), _int_list(s, "dsts", w),
                                    _get_int(s, "bandwidth", w, 1), _get_str(s, "name", w, "")))
    nics = list(topo.nics)
    for i, raw in enumerate(_array_of_tables(t, "nics")):
        nic = _table(raw, f"nics[{i}]", NIC_KEYS)
        w = f"nics[{i}]."
        nics.append(Nic(_int_list(nic, "senders", w), _int_list(nic, "receivers", w),
                        _get_int(nic, "bandwidth", w, 1), _get_int(nic, "rail", w, 0), _get_num(nic, "alpha_us", w),
                        _get_num(nic, "gbps", w)))
    topo = Topology(topo.name, topo.ranks, topo.links, switches, nics)
    nodes = _get_int(t, "nodes", "", 1, low=1)
    if nodes > 1:
        if topo.ranks * nodes > library.MAX_RANKS:
            raise _Located("nodes", f"= {nodes}: more than {library.MAX_RANKS} ranks in all")
        composed = topo.compose(nodes)
        # the name keeps compose's `-Nnodes` (`Topology.named_nodes`): what tells the constructions and the cost
        # model the nodes
        named = name if not name or name.endswith(f"-{nodes}nodes") else f"{name}-{nodes}nodes"
        topo = Topology(named or composed.name, composed.ranks, composed.links, composed.switches)
    return topo


def topology_to_dict(topo: Topology) -> dict[str, Any]:
    """The explicit (links) form, which loads back to an equal topology."""
    def opt(d: dict, **kv: Any) -> dict:
        d.update({k: v for k, v in kv.items() if v is not None})
        return d

    out: dict[str, Any] = {"name": topo.name, "ranks": topo.ranks}
    out["links"] = [opt({"src": l.src, "dst": l.dst, "bandwidth": l.bandwidth}, alpha_us=l.alpha_us, gbps=l.gbps)
                    for l in topo.links]
    if topo.switches:
        out["switches"] = [{"srcs": list(g.srcs), "dsts": list(g.dsts), "bandwidth": g.bandwidth, "name": g.name}
                           for g in topo.switches]
    if topo.nics:
        out["nics"] = [opt({"senders": list(n.senders), "receivers": list(n.receivers), "bandwidth": n.bandwidth,
                            "rail": n.rail}, alpha_us=n.alpha_us, gbps=n.gbps) for n in topo.nics]
    return out


def _spec_table(path: Path, kind: str, other: str) -> tuple[Any, str]:
    """The one `[kind]` table of a spec file, and the file's text (for the line of a later error)."""
    data, text = read_toml(path)
    if kind not in data:
        raise InputError(str(path), f"no [{kind}] table (is this a {other} spec?)")
    extra = sorted(set(data) - {kind})
    if extra:
        raise _fail(str(path), text, extra[0], f"unknown top-level key (a {kind} file has one [{kind}] table)")
    return data[kind], text


# The spec files being read, outermost first: a topology's `node` may name another file, which must not lead
# back to one of these (a file that is its own node recursed until Python's stack ran out).
_loading: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("loading", default=())
MAX_NODE_DEPTH = 8


def load_topology(path: Path | str, nodes: int = 1) -> Topology:
    path = Path(path)
    chain = _loading.get()
    key = os.path.realpath(path)
    if key in chain or len(chain) >= MAX_NODE_DEPTH:
        names = " -> ".join([*(os.path.basename(c) for c in chain), path.name])
        raise InputError(str(path), f"node: {names}: " + ("a topology cannot be its own node (directly or through "
                                                          "others)" if key in chain else
                                                          f"more than {MAX_NODE_DEPTH} levels of `node` files"))
    table, text = _spec_table(path, "topology", "collective")
    token = _loading.set((*chain, key))
    try:
        topo = topology_from_dict(table, path.parent)
    except ModelError as e:
        raise _fail(str(path), text, e.where, e.detail) from None
    finally:
        _loading.reset(token)
    library.check_composed(topo, nodes)  # --nodes: a command-line error, not one of the file
    return topo.compose(nodes)


def resolve_topology(name_or_path: str, nodes: int = 1) -> Topology:
    """A built-in name (`dgx1`, `ring:8`) or a spec file path."""
    path = Path(name_or_path)
    if name_or_path.endswith(".toml") or (path.is_file() and not library.is_builtin_topology(name_or_path)):
        return load_topology(name_or_path, nodes)
    return library.topology(name_or_path, nodes)


def save_topology(topo: Topology, path: Path | str) -> None:
    from smtcoll.files import write_text

    write_text(path, dumps_topology(topo))


def dumps_topology(topo: Topology) -> str:
    import tomli_w

    return tomli_w.dumps({"topology": topology_to_dict(topo)})


# --- collectives ---------------------------------------------------------------------------------

def collective_from_dict(data: Any, ranks: int | None = None, root: int | None = None,
                         chunks: int = 1) -> Collective:
    try:
        return _collective(data, ranks, root, chunks)
    except _Located as e:
        raise ModelError(e.where, e.message) from None


def _collective(data: Any, ranks: int | None, root: int | None, chunks: int) -> Collective:
    c = _table(data, "", COLLECTIVE_KEYS)
    name = _get_str(c, "name", "", "custom")
    if isinstance(c.get("pre"), list):  # explicit relations
        fixed = _get_int(c, "ranks", "", low=1)
        if ranks is not None and ranks != fixed:
            raise _Located("ranks", f"= {fixed}, but {ranks} ranks were asked for")
        pairs = {}
        for key in ("pre", "post"):
            value = c.get(key)
            if not isinstance(value, list) or not all(
                    isinstance(p, list) and len(p) == 2 and all(isinstance(x, int) and not isinstance(x, bool)
                                                                for x in p) for p in value):
                raise _Located(key, "expected an array of [rank, chunk] pairs")
            pairs[key] = [tuple(p) for p in value]
        coll = Collective(name, fixed, _get_int(c, "chunks", "", low=1), pairs["pre"], pairs["post"],
                          _int_list(c, "address", ""), _get_int(c, "root", "", None),
                          _get_int(c, "chunk_factor", "", 1, low=1))
        return coll.with_chunks(chunks)
    for key in ("pre", "post", "address", "chunks"):
        if key not in c:
            raise _Located(key, "missing")
        if not isinstance(c[key], str | int) or isinstance(c[key], bool):
            raise _Located(key, f"expected an expression string, got {_kind(c[key])}")
    rooted = c.get("rooted", False)
    if not isinstance(rooted, bool):
        raise _Located("rooted", f"expected true or false, got {_kind(rooted)}")
    fixed = _get_int(c, "ranks", "", None, low=1)
    if fixed is not None and ranks is not None and fixed != ranks:
        raise _Located("ranks", f"= {fixed}, but {ranks} ranks were asked for")
    n = ranks if ranks is not None else fixed
    if n is None:
        raise _Located("ranks", "the number of ranks is not known: give it in the file or on the command line")
    root = root if root is not None else _get_int(c, "root", "", None)
    spec = library.CollectiveSpec(name, str(c["chunks"]), str(c["pre"]), str(c["post"]), str(c["address"]), rooted)
    return spec.instantiate(n, root, chunks)


def collective_to_dict(coll: Collective) -> dict[str, Any]:
    """The explicit form (relations as pairs), which loads back to an equal collective."""
    out: dict[str, Any] = {"name": coll.name, "ranks": coll.ranks, "chunks": coll.chunks}
    if coll.root is not None:
        out["root"] = coll.root
    out["chunk_factor"] = coll.chunk_factor
    out["pre"] = [list(p) for p in coll.pre]
    out["post"] = [list(p) for p in coll.post]
    out["address"] = list(coll.address)
    return out


def spec_to_dict(spec: library.CollectiveSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"name": spec.name}
    if spec.description:
        out["description"] = spec.description
    out.update(rooted=spec.rooted, chunks=spec.chunks, pre=spec.pre, post=spec.post, address=spec.address)
    return out


def load_collective(path: Path | str, ranks: int | None = None, root: int | None = None,
                    chunks: int = 1) -> Collective:
    path = Path(path)
    table, text = _spec_table(path, "collective", "topology")
    try:
        return collective_from_dict(table, ranks, root, chunks)
    except ModelError as e:
        raise _fail(str(path), text, e.where, e.detail) from None


def resolve_collective(name_or_path: str, ranks: int | None, root: int | None = None, chunks: int = 1) -> Collective:
    if name_or_path.endswith(".toml") or Path(name_or_path).is_file():
        return load_collective(name_or_path, ranks, root, chunks)
    if ranks is None:
        raise ModelError("ranks", f"built-in collective {name_or_path!r} needs the number of ranks")
    return library.collective(name_or_path, ranks, root, chunks)


def dumps_collective(coll: Collective) -> str:
    import tomli_w

    return tomli_w.dumps({"collective": collective_to_dict(coll)})


def save_collective(coll: Collective, path: Path | str) -> None:
    from smtcoll.files import write_text

    write_text(path, dumps_collective(coll))


def spec_files_dir() -> Path | None:
    """The folder of the built-in spec files to copy and edit: inside the installed package (a wheel ships
    them as `smtcoll/specs_data`), or `specs/` of a clone (an editable install)."""
    package = Path(__file__).resolve().parent
    for candidate in (package / "specs_data", package.parent / "specs"):
        if (candidate / "topologies").is_dir():
            return candidate
    return None
