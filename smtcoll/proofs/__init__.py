"""Certificates: claims of impossibility with a proof anyone can re-check without trusting the writer.

A claim ("no schedule with at most S steps and R rounds") is proved by a bound witness
(`smtcoll.bounds`) or by an SMT-LIB2 formula of its negation (`encoding`) that z3 and cvc5 both
find unsatisfiable (`solvers`). `certificate` writes and checks the files.
"""

from smtcoll.proofs.certificate import (
    CheckResult,
    ClaimRefuted,
    NotProved,
    certificate_files,
    check_certificate,
    write_certificate,
)
from smtcoll.proofs.claim import Claim

__all__ = ["CheckResult", "Claim", "ClaimRefuted", "NotProved", "certificate_files", "check_certificate",
           "write_certificate"]
