"""Running an SMT-LIB2 file through z3 and through cvc5, two independent solvers, with a time limit."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import attrs

from smtcoll.vocabulary import SolverAnswer

DEFAULT_TIMEOUT_S = 60.0  # per solver and formula

SOLVER_NAMES = ("z3", "cvc5")


@attrs.frozen
class SolverRun:
    """`verdict` is sat, unsat, unknown (time limit or incomplete) or error (the solver could not run)."""

    solver: str
    version: str
    verdict: SolverAnswer
    seconds: float = 0.0
    reason: str = ""

    def to_json(self, timing: bool = True) -> dict[str, object]:
        out: dict[str, object] = {"solver": self.solver, "version": self.version, "verdict": self.verdict}
        if timing:
            out["seconds"] = round(self.seconds, 3)
        if self.reason:
            out["reason"] = self.reason
        return out


def solve_z3(path: Path, timeout_s: float) -> SolverRun:
    try:
        import z3
    except ImportError:
        return SolverRun("z3", "", "error", reason="z3 is not installed: pip install 'smtcoll[synth]' "
                       "(from a clone: pip install -e '.[synth]')")
    start = time.perf_counter()
    try:
        solver = z3.Solver()
        solver.set("timeout", max(1, int(timeout_s * 1000)))
        solver.from_file(str(path))
        result = solver.check()
    except z3.Z3Exception as e:
        return SolverRun("z3", z3.get_version_string(), "error", time.perf_counter() - start, f"z3 rejects the file: {e}")
    answer: SolverAnswer = "sat" if result == z3.sat else "unsat" if result == z3.unsat else "unknown"
    reason = solver.reason_unknown() if answer == "unknown" else ""
    return SolverRun("z3", z3.get_version_string(), answer, time.perf_counter() - start, reason)


def solve_cvc5(path: Path, timeout_s: float) -> SolverRun:
    try:
        import cvc5
    except ImportError:
        return SolverRun("cvc5", "", "error", reason="cvc5 is not installed: pip install 'smtcoll[proofs]' "
                       "(from a clone: pip install -e '.[proofs]')")
    start = time.perf_counter()
    solver = cvc5.Solver(cvc5.TermManager())
    version = solver.getVersion()
    version = version.decode() if isinstance(version, bytes) else str(version)
    try:
        solver.setOption("tlimit-per", str(max(1, int(timeout_s * 1000))))
        parser = cvc5.InputParser(solver)
        parser.setFileInput(cvc5.InputLanguage.SMT_LIB_2_6, str(path))
        symbols = parser.getSymbolManager()
        output = ""
        while True:
            command = parser.nextCommand()
            if command.isNull():
                break
            output += command.invoke(solver, symbols)
    except Exception as e:  # noqa: BLE001  (cvc5 raises its own RuntimeError subclasses for bad input)
        return SolverRun("cvc5", version, "error", time.perf_counter() - start, f"cvc5 rejects the file: {e}")
    words = output.split()
    last = words[-1] if words else ""
    verdict: SolverAnswer = "sat" if last == "sat" else "unsat" if last == "unsat" else "unknown"
    reason = output.strip() if verdict == "unknown" else ""
    return SolverRun("cvc5", version, verdict, time.perf_counter() - start, reason)


SOLVERS: dict[str, Callable[[Path, float], SolverRun]] = {"z3": solve_z3, "cvc5": solve_cvc5}


def solve_all(path: Path, timeout_s: float) -> list[SolverRun]:
    return [SOLVERS[name](path, timeout_s) for name in SOLVER_NAMES]
