"""`synth --method`: the exact search, the large-instance engine, or both (auto).

auto: the engine answers first (seconds, checked, with its gap to the bound); at the bound its schedule
is optimal by the bound alone. Otherwise, up to AUTO_EXACT_UP_TO ranks, the exact search looks for
fewer steps with the engine's schedule as its cap, so a time limit still leaves that schedule; beyond,
the engine's schedule and its gap are the answer (the SMT search does not scale there).
"""

from __future__ import annotations

import time

import attrs

from smtcoll.model import Collective, Topology
from smtcoll.synth.result import Attempt, Point, SynthResult
from smtcoll.synth.scale.engine import NoSchedule, Scaled, synthesize

AUTO_EXACT_UP_TO = 16


def engine_result(topo: Topology, base: Collective, chunks: int) -> tuple[SynthResult, Scaled | None]:
    t0, c0 = time.monotonic(), time.process_time()
    coll = base.with_chunks(chunks)
    try:
        scaled = synthesize(topo, coll)
    except NoSchedule as e:
        from smtcoll.bounds import search_bounds

        return SynthResult("infeasible", None, "least-steps", search_bounds(topo, coll).to_json(True, chunks), [],
                           message=f"proved: {e}", seconds=time.monotonic() - t0, method="scale"), None
    s, b = scaled.schedule, scaled.bounds
    gap = scaled.to_json()
    at_bound = len(s.steps) <= b.least_steps(True, chunks) and s.rounds == len(s.steps)
    optimal = ({"steps": len(s.steps), "proved": True, "why": f"lower bound: {b.steps_why(True, chunks)}"}
               if at_bound else {"steps_at_least": b.least_steps(True, chunks), "steps_at_most": len(s.steps),
                                 "proved": False})
    message = "" if at_bound else (f"{gap['gap_steps']} step(s) above the lower bound "
                                   f"({len(s.steps)} vs {b.least_steps(True, chunks)}), "
                                   f"{gap['gap_rounds']} round(s) above ({s.rounds} vs {b.rounds(chunks)})")
    attempt = Attempt(len(s.steps), s.rounds, chunks, "sat", time.process_time() - c0, "scale")
    # the claim optimality rests on (one step fewer is impossible), for --prove, as the exact search has
    below = len(s.steps) - 1
    pruned = [Point(below, None, chunks, "infeasible", f"bound: {b.steps_why(True, chunks)}", claim=(below, below))
              ] if at_bound and below >= 1 else []
    return SynthResult("found", s, "least-steps", b.to_json(True, chunks), [attempt],
                       [Point(len(s.steps), s.rounds, chunks, "found")], pruned, optimal=optimal, message=message,
                       seconds=time.monotonic() - t0, method=f"scale: {scaled.method}", gap=gap), scaled


def least_steps(topo: Topology, base: Collective, method: str, rounds: int | None, chunks: int,
                max_steps: int | None, timeout: float | None, progress=None,
                max_memory_mb: int | None = None) -> SynthResult:
    from smtcoll.synth.exact import strategies

    if method == "exact" or rounds is not None:
        return strategies.least_steps(topo, base, rounds, chunks, max_steps, timeout, progress,
                                      max_memory_mb=max_memory_mb)
    # an unreachable rank: the exact path's answer, with its witness, before any construction
    early = strategies.unreachable_result(topo, base, "least-steps", strategies.Clock(timeout, max_memory_mb))
    if early is not None:
        return early
    result, scaled = engine_result(topo, base, chunks)
    if progress is not None and result.attempts:
        progress(result.attempts[0])
    over = max_steps is not None and scaled is not None and len(scaled.schedule.steps) > max_steps
    if method == "scale" or scaled is None:
        return result
    if not over and (result.optimal.get("proved") or topo.ranks > AUTO_EXACT_UP_TO):
        return result
    left = None if timeout is None else max(0.1, timeout - result.seconds)
    exact = strategies.least_steps(topo, base, None, chunks, max_steps, left, progress,
                                   max_memory_mb=max_memory_mb, known=scaled.schedule)
    if exact.schedule is scaled.schedule:  # the search did not beat the engine: say where it came from
        return attrs.evolve(exact, method=result.method, gap=result.gap,
                            attempts=(*result.attempts, *exact.attempts))
    return attrs.evolve(exact, attempts=(*result.attempts, *exact.attempts))
