"""Synthesis with Z3 (the only package besides proofs that imports z3)."""
