"""A long fuzz campaign of `smtcoll verify`: the strategies of tests/helpers/xml_mutations.py (structural and
attribute edits, garbage, negative, huge and non-decimal values, truncation, random bytes, deep nesting,
encodings and byte order marks) on every corpus file, many more examples than the test suite.

Every mutant is checked in process like `smtcoll verify` does; a traceback, a hang (over `--timeout`
seconds), a finding without a message or output that a CI reader cannot parse fails the campaign and is
printed with the mutant (hypothesis shrinks it). At the end: examples run, verdict counts, time.

    python benchmarks/fuzz_verify.py [--examples 20000] [--seed 0] [--max-bytes 0]
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402

from helpers.xml_mutations import check_mutant, mutants, seeds  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-bytes", type=int, default=0, help="only seed files up to this size (0: all)")
    parser.add_argument("--timeout", type=int, default=60, help="seconds one check may take before it is a hang")
    opts = parser.parse_args()
    corpus = seeds(opts.max_bytes)
    verdicts: collections.Counter = collections.Counter()
    slowest = [0.0, b""]
    start = time.perf_counter()

    @seed(opts.seed)
    @settings(max_examples=opts.examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(mutants(corpus))
    def campaign(data: bytes) -> None:
        t = time.perf_counter()
        verdicts[check_mutant(data, opts.timeout).verdict] += 1
        if time.perf_counter() - t > slowest[0]:
            slowest[:] = [time.perf_counter() - t, data[:80]]

    campaign()
    total = sum(verdicts.values())
    print(f"seed files: {len(corpus)}; examples: {total}; verdicts: ok {verdicts['ok']}, error {verdicts['error']}, "
          f"unusable {verdicts['unusable']}; failures: 0")
    print(f"slowest check {slowest[0]:.2f} s; total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
