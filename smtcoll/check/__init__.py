"""The independent checker: everything smtcoll believes about correctness, and nothing else.

It never imports `smtcoll.synth` or z3 (an import-linter contract enforces this): every fact it needs is
re-derived here by its own simulation.
"""
