"""Small helpers for messages people read: counts with the right plural ("1 hop", "2 hops")."""

from __future__ import annotations

# Words whose plural is not the word plus "s".
_IRREGULAR = {"is": "are", "its": "their"}


def plural(n: float, word: str) -> str:
    """`word` in the form that goes with the number `n` (English: singular for exactly 1)."""
    if n == 1:
        return word
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    return word + ("es" if word.endswith(("s", "sh", "ch", "x")) else "s")


def count(n: float, word: str) -> str:
    """`1 hop`, `3 hops`, `1.5 rounds`: the number and the word in the form that goes with it."""
    shown = int(n) if isinstance(n, float) and n.is_integer() and abs(n) < 2**53 else n
    return f"{shown} {plural(n, word)}"


def singular_unit(n: float, unit: str) -> str:
    """A unit such as `rounds` or `rounds per chunk` with its first word agreeing with `n`."""
    first, sep, rest = unit.partition(" ")
    if n == 1 and first.endswith("s") and first[:-1] in ("round", "step", "chunk", "hop", "byte", "rank"):
        return first[:-1] + sep + rest
    return unit
