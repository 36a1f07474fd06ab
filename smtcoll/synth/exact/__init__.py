"""The exact search: SMT encodings solved by z3, and the strategies that ask them questions.

Every impossibility it reports is an unsat answer or a proved bound; it is the only part of the
synthesizer that imports z3 (the engine, `smtcoll.synth.scale`, never does: pyproject's import contract).
"""
