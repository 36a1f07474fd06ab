"""Synthesis: the Z3 encodings and the search strategies (with `proofs/`, the only z3 importer)."""
