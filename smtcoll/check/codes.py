"""Every diagnostic code the checker can emit, declared once with its severity and a one-line meaning.

A code is a stable kebab-case name that scripts may match on (`violations[].code` of `smtcoll verify
--format json`). docs/verify.md lists each of them; a test checks that every code the checker's source
emits is registered here and documented there.
"""

from __future__ import annotations

import attrs

from smtcoll.vocabulary import Severity


@attrs.frozen
class Code:
    """A diagnostic code: `severities` are the ones it can have (the first is the usual one)."""

    name: str
    severities: tuple[Severity, ...]
    doc: str


_ALL = (
    # reading the file
    Code("unusable", ("error",), "the file cannot be read or checked at all (exit 2)"),
    Code("internal-error", ("error",), "a bug of smtcoll met this file: reported unusable (exit 2, never ok)"),
    Code("parse-rule", ("error", "warning"), "a runtime refuses the file (warning when only some runtimes do)"),
    Code("bad-integer", ("error",), "an integer attribute is garbage or overflows"),
    Code("integer-format", ("warning",), "a hex or octal integer"),
    Code("attribute-dropped", ("warning",), "more than 16 attributes on one element: the runtimes drop the rest"),
    Code("attribute-value", ("warning",), "a 0/1 attribute with another value, which the runtimes treat as 1"),
    Code("ignored-element", ("info", "warning"), "an element the runtimes skip (a warning when it is misplaced)"),
    Code("not-well-formed", ("warning",), "the runtimes load the file but an XML library cannot read it"),
    Code("duplicate-algo", ("warning",), "a second <algo> element: the runtimes use the first"),
    Code("attribute-repeated", ("warning",), "an attribute given twice: the runtimes read the first"),
    Code("limit", ("error",), "more ranks or chunks than any runtime can hold: not checked further"),
    # accepted by the runtimes, wrong at run time
    Code("channel", ("error",), "more channels than NCCL has, or a thread block on a channel with no connection"),
    Code("peer", ("error",), "a send or receive peer outside the ranks"),
    Code("gpu-id", ("error",), "a gpu id outside 0..ngpus-1 or defined twice"),
    Code("offset-range", ("error",), "an offset beyond int16_t"),
    Code("unsupported-step", ("error",),
         "a step type a runtime accepts but does not execute (ra stops the legacy interpreter)"),
    Code("not-checked", ("info", "error"), "the semantic checks could not run (missing or out-of-range values)"),
    Code("missing-gpu", ("info",), "a rank has no <gpu> element: it runs no thread block"),
    Code("array-overflow", ("error",), "more transmissions, dependencies or reductions than a parser array holds"),
    Code("fusion-overflow", ("error",), "a fused reduction of more than 16 sources: the kernel writes past its array"),
    Code("fusion-drops-destination", ("error",),
         "Simple protocol, a fused reduction of 16 sources loses the destination"),
    # selection and style
    Code("max-bytes", ("warning",), "minBytes/maxBytes select the algorithm for no sizes on some runtime"),
    Code("never-selected", ("warning",), "inplace=0 and outofplace=0: the executor never selects it"),
    Code("copy-element", ("warning",), "<copy> elements: no runtime executes them"),
    Code("step-number", ("warning",), "a step's s is not its position (dependencies may name another step)"),
    Code("trailing-nop", ("warning",), "nop dependencies after the last transfer, which the runtime drops"),
    # connections and execution
    Code("duplicate-connection", ("error",), "two thread blocks share one connection (one FIFO)"),
    Code("unmatched-send", ("error",), "more sends than receives on a connection"),
    Code("unmatched-recv", ("error",), "more receives than sends on a connection"),
    Code("count-mismatch", ("error",), "the k-th send and the k-th receive of a connection differ in cnt"),
    Code("dependency", ("error", "info"), "a wait on a missing thread block or a flag never set, or depid > 127"),
    Code("deadlock", ("error",), "no order of execution completes"),
    Code("fifo-capacity", ("warning", "info"),
         "deadlocks only at some buffer sizes, where steps become several messages"),
    Code("race", ("error",), "two thread blocks touch one location in no fixed order, one of them writing"),
    Code("read-before-write", ("error",), "a step reads a location before anything defined it"),
    Code("out-of-bounds", ("error",), "an offset or offset+cnt beyond the real buffer of the mode"),
    Code("double-count", ("error",), "a reduction adds a contribution twice"),
    # the collective
    Code("postcondition", ("error",), "an output chunk ends wrong (missing, extra or undefined contributions)"),
    Code("postcondition-roots", ("info",), "a rooted collective without --root: the roots the output is correct for"),
    Code("postcondition-unchecked", ("warning",), "no postcondition known (give --collective or --root)"),
    Code("collective-mismatch", ("error",), "--collective has another number of ranks than the program"),
    # the topology (--topology) and step schedules
    Code("missing-link", ("error",), "a send over a link the topology does not have"),
    Code("topology", ("error",), "the topology has another number of ranks than the program"),
    Code("topology-mismatch", ("error",), "the schedule's collective and the topology differ in ranks"),
    Code("self-send", ("error",), "a schedule's send from a rank to itself"),
    Code("unknown-address", ("error",), "a schedule sends an address its collective does not have"),
    Code("not-held", ("error",), "a schedule's rank sends an address before it holds it"),
    Code("bandwidth", ("error",), "a step moves more chunks over a link than bandwidth x rounds"),
    Code("switch-bandwidth", ("error",), "a step moves more chunks through a switch group than its capacity"),
    # timed schedules (TE-CCL, TACCL, ForestColl, transfer logs)
    Code("unknown-rank", ("error",), "a transfer names a rank the topology does not have"),
    Code("bad-time", ("error",), "a transfer ends before it starts, or a time is not a number"),
    Code("bad-path", ("error",), "a ForestColl send's path does not run from its source to its destination"),
    Code("chunk-count", ("error",), "the chunks a file declares do not add up (ForestColl trees per root)"),
    Code("optimistic-claim", ("error",), "the file claims a time more than 1% below the verified one"),
    Code("pessimistic-claim", ("info",), "the file claims a time more than 1% above the verified one"),
    Code("bufferless-gpu", ("warning",), "a TE-CCL model treats a GPU as a bufferless switch"),
    Code("inconsistent-claim", ("warning",), "a file's claimed finish time disagrees with its own epochs"),
    Code("bad-height", ("warning",), "a ForestColl tree's declared height is not its depth"),
    Code("topology-inferred", ("info",), "the file holds no topology: the machine used is named"),
    Code("chunk-size", ("info", "warning"), "how the chunk size in bytes was derived from the file"),
    Code("chunks-hint", ("warning",), "--chunks disagrees with the chunks per input the program's buffers hold"),
)

CODES: dict[str, Code] = {c.name: c for c in _ALL}
