"""Lowering a step schedule to an MSCCL program (docs/lower.md), one module per stage.

1. `pipeline.lower` asks the schedule checker first: a schedule it rejects is not lowered
   (`RejectedSchedule`, exit 1); `options` checks what the user asked and picks the target runtimes.
2. `layout`: the collective is matched to a runtime geometry (where each chunk lives in `i`, `o`).
3. `transfers`: the schedule is simulated like the checker does: every send becomes a transfer that
   copies, adds (`rrc`) or replaces (`r`) at the receiver; sends whose result is never observed (a chunk
   the receiver already has, a value no later send or postcondition reads) are dropped.
4. `storage`: a value that a rank must output lives in its output slot; other received values live in
   scratch slots, reused once their last reader is done (greedy interval colouring, optimal for
   intervals). In place, an output slot that aliases an input still needed (alltoall, custom) is not
   written before the end: the value is staged in scratch and copied at the end.
5. `fusion` and `threadblocks`: per rank and instance, one sending tb per peer and one receiving tb per
   peer (one tb per connection and FIFO), `rcs`/`rrcs`/`rrs` fusing a forward into the receiving tb when
   the same value goes on to exactly one peer in the next step, local copies on tbs of their own (16 at
   most each).
6. `dependencies`: per rank, in step order, read-after-write, write-after-read and write-after-write on
   the physical locations of every declared mode (aliasing included), reduced to the ones not already
   implied by program order or by earlier waits; extra ones become `nop` chains, targets get `hasdep`.
7. `instances`: the program is replicated over channels with interleaved chunks (index x -> x*I + k),
   the MSCCLang default, which keeps the per-rank shares of the buffer layout intact.

`files` writes the program only once the independent checker accepts it (`lower_to_file`).
This package sits above `smtcoll.msccl` (the file format) and `smtcoll.check` (the checker).
"""

from smtcoll.lower.files import lower_to_file, verify_lowered
from smtcoll.lower.options import CannotLower, LowerOptions, RejectedSchedule
from smtcoll.lower.pipeline import Lowered, lower

__all__ = ["CannotLower", "LowerOptions", "Lowered", "RejectedSchedule", "lower", "lower_to_file",
           "verify_lowered"]
