"""MSCCL XML programs: the `Program` data model and its reader (docs/msccl-format.md, docs/verify.md)."""

from smtcoll.msccl.program import Finding, Gpu, Op, Program, ThreadBlock
from smtcoll.msccl.reader import ReadResult, read_program, read_program_bytes

__all__ = ["Finding", "Gpu", "Op", "Program", "ReadResult", "ThreadBlock", "read_program", "read_program_bytes"]
