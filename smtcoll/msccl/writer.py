"""`Program` -> MSCCL XML text that the hand-written readers of both runtimes accept.

docs/msccl-format.md, "Reading rules", lists what those readers accept.

The runtimes' readers are not XML parsers: one element per line, attributes on that line separated by
single spaces, double-quoted values, no `<?xml?>` declaration, no tabs, no entities (they are not
decoded). Indentation is spaces only. The attribute set follows the dialect: the executor needs
`outofplace`, `minBytes` and `maxBytes` on `<algo>`; the legacy runtime reads `minBytes`/`maxBytes` when
present and ignores `outofplace`. Attributes that are None are left out, so the `Program` decides the
dialect. Output is deterministic: the same `Program` gives the same text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from smtcoll.errors import ModelError
from smtcoll.msccl.program import STEP_ATTRS, Op, Program
from smtcoll.msccl.runtime import MAX_STR_LEN

MAX_VALUE = MAX_STR_LEN
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.+-]")


def safe_name(name: str) -> str:
    """A label the runtimes' readers keep intact: no quotes, entities or spaces, at most 255 characters."""
    return _SAFE_NAME.sub("_", name)[:MAX_VALUE] or "smtcoll"


def _attrs(pairs: Sequence[tuple[str, object]]) -> str:
    out = []
    for key, value in pairs:
        if value is None:
            continue
        text = str(value)
        if '"' in text or "<" in text or "&" in text or "\n" in text or "\t" in text or len(text) > MAX_VALUE:
            raise ModelError(key, f"value {text[:40]!r} cannot be written for the runtimes' readers")
        out.append(f'{key}="{text}"')
    return " ".join(out)


def _step(op: Op) -> str:
    values = {name: getattr(op, name) for name in STEP_ATTRS}
    missing = [k for k, v in values.items() if v is None]
    if missing:
        raise ModelError("step", f"attribute(s) {', '.join(missing)} missing: every step needs all ten")
    return f"<step {_attrs(list(values.items()))}/>"


def write_program(p: Program) -> str:
    """The XML text of `p`, ending with a newline."""
    return "".join(program_lines(p))


def program_lines(p: Program) -> Iterator[str]:
    """The lines of `write_program(p)`, each with its newline: a program of two million steps is written
    to a file line by line instead of as one string of 250 MB."""
    head = [("name", p.name), ("proto", p.proto), ("nchannels", p.nchannels), ("nchunksperloop", p.nchunksperloop),
            ("ngpus", p.ngpus), ("coll", p.coll), ("inplace", p.inplace), ("outofplace", p.outofplace),
            ("minBytes", p.min_bytes), ("maxBytes", p.max_bytes), ("nthreads", p.nthreads), ("redop", p.redop)]
    yield f"<algo {_attrs(head)}>\n"
    for g in p.gpus:
        sizes = [("id", g.id), ("i_chunks", g.i_chunks), ("o_chunks", g.o_chunks), ("s_chunks", g.s_chunks)]
        yield f"  <gpu {_attrs(sizes)}>\n"
        for tb in g.tbs:
            yield f"    <tb {_attrs([('id', tb.id), ('send', tb.send), ('recv', tb.recv), ('chan', tb.chan)])}>\n"
            yield "".join(f"      {_step(op)}\n" for op in tb.steps)
            yield "    </tb>\n"
        yield "  </gpu>\n"
    yield "</algo>\n"
