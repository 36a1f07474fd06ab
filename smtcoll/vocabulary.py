"""The closed vocabularies of results, declared once: what a verdict, a solver's answer and a search
status can be, and what each word means. JSON output uses exactly these words.
"""

from __future__ import annotations

from typing import Literal, get_args

# A checked file (`smtcoll verify`) or certificate (`smtcoll proof check`): exit 0, 1, 2.
#   ok: verified; error: it is wrong (a violation of severity error, a certificate that does not prove
#   its claim, no runtime accepts it); unusable: it could not be read or checked at all.
Verdict = Literal["ok", "error", "unusable"]
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)

# A certificate (`smtcoll proof check`) has one more verdict, exit 3: timeout, a solver gave no answer
# (`unknown`) within the time limit, so the claim is not re-proved, but nothing shows the certificate wrong.
CertificateVerdict = Literal["ok", "error", "unusable", "timeout"]
CERTIFICATE_VERDICTS: tuple[CertificateVerdict, ...] = get_args(CertificateVerdict)
VERDICT_TEXT: dict[CertificateVerdict, str] = {"ok": "ok", "error": "wrong", "unusable": "unusable",
                                               "timeout": "timeout"}  # in text output

# How bad a finding is; only `error` makes the verdict `error`.
Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = get_args(Severity)

# What one solver said about one formula. `unknown`: no answer, for any reason (its time limit, or the
# solver gave up); `error`: the solver could not run (not installed, or it rejects the file).
SolverAnswer = Literal["sat", "unsat", "unknown", "error"]
SOLVER_ANSWERS: tuple[SolverAnswer, ...] = get_args(SolverAnswer)

# The status of a synthesis (`smtcoll synth`): exit 0, 1, 3. `timeout` is only this: the command's time
# limit stopped the search (a solver's `unknown` within the limit is reported as `unknown`).
Status = Literal["found", "infeasible", "timeout"]
STATUSES: tuple[Status, ...] = get_args(Status)
