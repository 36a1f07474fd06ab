"""Numbers and JSON text as the readers of other tools' files take them: ASCII digits only, bounded length,
finite values; anything else is bad input with its place, never a Python exception from deep inside.

Why not `int()` and `json.loads` alone: `int("²")` and `int("٣")` accept Unicode digits that `str.isdigit`
lets through, `int()` of more than 4300 decimal digits raises ValueError (CPython's int-to-str limit, also
inside `json.loads`), and `float("1e400")` is infinity.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from smtcoll.errors import InputError

MAX_DIGITS = 30  # far beyond any count or id a reader bounds afterwards; keeps int() cheap and in range
_INT = re.compile(rf"[+-]?[0-9]{{1,{MAX_DIGITS}}}")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,4})?")
_LONG_DIGITS = re.compile(r"[0-9]{4301,}")


def ascii_int(text: Any) -> int | None:
    """The integer `text` spells in ASCII decimal (at most MAX_DIGITS digits), an int as it is, else None."""
    if isinstance(text, bool):
        return None
    if isinstance(text, int):
        return text
    if isinstance(text, str) and _INT.fullmatch(text.strip()):
        return int(text.strip())
    return None


def finite_float(text: Any) -> float | None:
    """The finite number `text` spells in ASCII (or a finite int/float), else None (`.`, `nan`, `1e400`)."""
    if isinstance(text, bool):
        return None
    if isinstance(text, int | float):
        try:
            v = float(text)
        except OverflowError:  # an int too large for a float
            return None
    elif isinstance(text, str) and _FLOAT.fullmatch(text.strip()):
        v = float(text.strip())
    else:
        return None
    return v if math.isfinite(v) else None


def loads_json(text: str, name: str) -> Any:
    """`json.loads` with every failure as an InputError naming the file and the line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(name, f"column {e.colno}: not valid JSON: {e.msg}", e.lineno) from None
    except RecursionError:
        raise InputError(name, "not valid JSON: nested too deeply") from None
    except ValueError:  # an integer of more than 4300 digits (CPython's int-to-str limit)
        m = _LONG_DIGITS.search(text)
        line = text.count("\n", 0, m.start()) + 1 if m else None
        raise InputError(name, "a number of more than 4300 digits; no field of a schedule needs one", line) from None
