"""What the construction families share: the collective's kind and the "does not apply" signal."""

from __future__ import annotations

from smtcoll import collectives
from smtcoll.errors import SmtcollError
from smtcoll.model import Collective, Send

KINDS = collectives.NAMES


class NotApplicable(SmtcollError):
    """This construction does not apply to this collective or topology (the message says why)."""


def kind(coll: Collective) -> str:
    """The built-in family of `coll` (chunk factor 1), recognised by its relations, not only its name: a
    spec file with the same pre, post and addresses is the same collective."""
    from smtcoll import library

    name = coll.name.split("-")[0]
    if name in KINDS:
        want = library.collective(name, coll.ranks, coll.root)
        if (want.pre, want.post, want.address) == (coll.pre, coll.post, coll.address):
            return name
    raise NotApplicable(f"{coll.name!r} is not a built-in collective with chunk factor 1")


def send_key(send: Send) -> tuple[int, int, int]:
    """Sends sort by (chunk, src, dst), the order `Send` defines, without attrs' slower comparison."""
    return send.chunk, send.src, send.dst
