"""A small whitelisted expression language for spec files (never `eval`).

Grammar: integers, `true`/`false`, the variables a context allows (`rank`, `chunk`, `ranks`,
`chunks`, `root`), `+ - * // %`, unary `-`, comparisons (chained), `and`/`or`/`not`, parentheses and
`a if cond else b`. Python's parser builds the tree; only the node types below are accepted.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import numpy as np

from smtcoll.errors import ModelError

MAX_LENGTH = 500
MAX_NODES = 200

Env = Mapping[str, int]
Fn = Callable[[Env], int]

_BINOPS: dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_CMPOPS: dict[type, Callable[[int, int], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_SYMBOLS = {ast.Div: "/", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
            ast.LShift: "<<", ast.RShift: ">>", ast.MatMult: "@"}


@attrs.frozen
class Expr:
    """A parsed expression; call `evaluate` with values for its variables."""

    text: str
    variables: frozenset[str]
    _fn: Fn = attrs.field(eq=False, repr=False)
    _tree: ast.AST | None = attrs.field(default=None, eq=False, repr=False)

    def evaluate(self, env: Env) -> int:
        try:
            return int(self._fn(env))
        except ZeroDivisionError:
            values = ", ".join(f"{k}={env[k]}" for k in sorted(self.variables) if k in env)
            raise ModelError("", f"division by zero in {self.text!r} at {values}") from None


def parse(text: str, allowed: frozenset[str] | set[str], where: str = "") -> Expr:
    """Parse `text`, allowing only the variables in `allowed`; errors name `where`."""
    if not isinstance(text, str | int) or isinstance(text, bool):
        raise ModelError(where, f"expected an expression string, got {type(text).__name__}")
    text = str(text)
    if len(text) > MAX_LENGTH:
        raise ModelError(where, f"expression longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        msg = getattr(e, "msg", None) or str(e) or type(e).__name__
        raise ModelError(where, f"bad expression {text!r}: {msg}") from None
    count = sum(1 for _ in ast.walk(tree))
    if count > MAX_NODES:
        raise ModelError(where, f"expression too complex ({count} nodes, at most {MAX_NODES})")
    used: set[str] = set()
    fn = _compile(tree.body, frozenset(allowed), used, where, text)
    return Expr(text, frozenset(used), fn, tree.body)


def _compile(node: ast.AST, allowed: frozenset[str], used: set[str], where: str, text: str) -> Fn:
    def sub(n: ast.AST) -> Fn:
        return _compile(n, allowed, used, where, text)

    def bad(msg: str) -> ModelError:
        return ModelError(where, f"bad expression {text!r}: {msg}")

    match node:
        case ast.Constant(value=bool() as b):
            flag = int(b)
            return lambda env: flag
        case ast.Constant(value=int() as v):
            value = v
            return lambda env: value
        case ast.Name(id="true" | "True"):
            return lambda env: 1
        case ast.Name(id="false" | "False"):
            return lambda env: 0
        case ast.Name(id=name):
            if name not in allowed:
                names = ", ".join(sorted(allowed)) or "none"
                raise bad(f"unknown name {name!r} (allowed: {names})")
            used.add(name)
            key = name
            return lambda env: env[key]
        case ast.UnaryOp(op=ast.USub(), operand=x):
            f = sub(x)
            return lambda env: -f(env)
        case ast.UnaryOp(op=ast.UAdd(), operand=x):
            return sub(x)
        case ast.UnaryOp(op=ast.Not(), operand=x):
            f = sub(x)
            return lambda env: int(not f(env))
        case ast.BinOp(left=a, op=op, right=b) if type(op) in _BINOPS:
            fa, fb, fo = sub(a), sub(b), _BINOPS[type(op)]
            return lambda env: fo(fa(env), fb(env))
        case ast.BinOp(op=op):
            sym = _SYMBOLS.get(type(op), type(op).__name__)
            hint = " (use // for integer division)" if sym == "/" else ""
            raise bad(f"operator {sym!r} is not allowed{hint}")
        case ast.BoolOp(op=ast.And(), values=vals):
            fs = [sub(v) for v in vals]
            return lambda env: int(all(f(env) for f in fs))
        case ast.BoolOp(op=ast.Or(), values=vals):
            fs = [sub(v) for v in vals]
            return lambda env: int(any(f(env) for f in fs))
        case ast.Compare(left=first, ops=ops, comparators=rest):
            if any(type(o) not in _CMPOPS for o in ops):
                raise bad("only == != < <= > >= comparisons are allowed")
            fs = [sub(first)] + [sub(c) for c in rest]
            cmps = [_CMPOPS[type(o)] for o in ops]

            def compare(env: Env) -> int:
                vals = [g(env) for g in fs]
                return int(all(cmp(a, b) for cmp, a, b in zip(cmps, vals, vals[1:], strict=False)))

            return compare
        case ast.IfExp(test=t, body=b, orelse=o):
            f_test, f_then, f_else = sub(t), sub(b), sub(o)
            return lambda env: f_then(env) if f_test(env) else f_else(env)
        case _:
            raise bad(f"{type(node).__name__} is not allowed")


# --- evaluation over many points at once -----------------------------------------------------------
# A collective on 1024 ranks evaluates its relations at a million (rank, chunk) points; one Python call
# per point takes seconds. `evaluate_grid` computes the same values with numpy over whole arrays. int64
# arithmetic equals Python's only without overflow and numpy evaluates both sides of `and`/`or`/`if`, so
# the grid path is taken only when interval bounds prove every intermediate fits in int64 and no divisor
# can be zero anywhere; otherwise the caller falls back to `evaluate` point by point.

_LIMIT = 1 << 62
Bounds = tuple[int, int]


class _NotExact(Exception):
    """The grid evaluation cannot promise Python's exact result (possible overflow or zero divisor)."""


def _bounds(node: ast.AST, ranges: Mapping[str, Bounds]) -> Bounds:
    """Lowest and highest value `node` can take when each variable lies in its range."""
    match node:
        case ast.Constant(value=bool() as b):
            lo = hi = int(b)
        case ast.Constant(value=int() as v):
            lo = hi = v
        case ast.Name(id="true" | "True"):
            lo = hi = 1
        case ast.Name(id="false" | "False"):
            lo = hi = 0
        case ast.Name(id=name):
            lo, hi = ranges[name]
        case ast.UnaryOp(op=ast.USub(), operand=x):
            a, b = _bounds(x, ranges)
            lo, hi = -b, -a
        case ast.UnaryOp(op=ast.UAdd(), operand=x):
            lo, hi = _bounds(x, ranges)
        case ast.UnaryOp(op=ast.Not(), operand=x):
            _bounds(x, ranges)
            lo, hi = 0, 1
        case ast.BoolOp(values=vals):
            for v in vals:
                _bounds(v, ranges)
            lo, hi = 0, 1
        case ast.Compare(left=first, comparators=rest):
            for v in [first, *rest]:
                _bounds(v, ranges)
            lo, hi = 0, 1
        case ast.IfExp(test=t, body=b, orelse=o):
            _bounds(t, ranges)
            (a1, b1), (a2, b2) = _bounds(b, ranges), _bounds(o, ranges)
            lo, hi = min(a1, a2), max(b1, b2)
        case ast.BinOp(left=x, op=op, right=y):
            (a1, b1), (a2, b2) = _bounds(x, ranges), _bounds(y, ranges)
            if isinstance(op, ast.Add):
                lo, hi = a1 + a2, b1 + b2
            elif isinstance(op, ast.Sub):
                lo, hi = a1 - b2, b1 - a2
            elif isinstance(op, ast.Mult):
                products = (a1 * a2, a1 * b2, b1 * a2, b1 * b2)
                lo, hi = min(products), max(products)
            elif a2 <= 0 <= b2:
                raise _NotExact  # a zero divisor is possible: Python may raise, or skip it lazily
            elif isinstance(op, ast.FloorDiv):
                m = max(abs(a1), abs(b1))
                lo, hi = -m - 1, m + 1
            else:  # Mod: the result has the divisor's sign and is smaller than it
                m = max(abs(a2), abs(b2))
                lo, hi = -m, m
        case _:
            raise _NotExact
    if not (-_LIMIT < lo and hi < _LIMIT):
        raise _NotExact
    return lo, hi


def _grid(node: ast.AST, env: Mapping[str, Any]) -> Any:
    """The value of `node` over numpy arrays (broadcast) or ints, with Python's integer semantics."""
    match node:
        case ast.Constant(value=v):
            return int(v)
        case ast.Name(id="true" | "True"):
            return 1
        case ast.Name(id="false" | "False"):
            return 0
        case ast.Name(id=name):
            return env[name]
        case ast.UnaryOp(op=ast.USub(), operand=x):
            return -_grid(x, env)
        case ast.UnaryOp(op=ast.UAdd(), operand=x):
            return _grid(x, env)
        case ast.UnaryOp(op=ast.Not(), operand=x):
            return np.equal(_grid(x, env), 0).astype(np.int64)
        case ast.BinOp(left=a, op=op, right=b):
            return _BINOPS[type(op)](_grid(a, env), _grid(b, env))  # numpy's // and % floor as Python's do
        case ast.BoolOp(op=ast.And(), values=vals):
            out = np.not_equal(_grid(vals[0], env), 0)
            for v in vals[1:]:
                out = out & np.not_equal(_grid(v, env), 0)
            return out.astype(np.int64)
        case ast.BoolOp(op=ast.Or(), values=vals):
            out = np.not_equal(_grid(vals[0], env), 0)
            for v in vals[1:]:
                out = out | np.not_equal(_grid(v, env), 0)
            return out.astype(np.int64)
        case ast.Compare(left=first, ops=ops, comparators=rest):
            vals = [_grid(first, env)] + [_grid(c, env) for c in rest]
            out = np.bool_(True)
            for o, a, b in zip(ops, vals, vals[1:], strict=False):
                out = out & _CMPOPS[type(o)](a, b)
            return np.asarray(out).astype(np.int64)
        case ast.IfExp(test=t, body=b, orelse=o):
            return np.where(np.not_equal(_grid(t, env), 0), _grid(b, env), _grid(o, env))
    raise _NotExact  # not reached: `parse` accepts only the nodes above


def evaluate_grid(e: Expr, ranges: Mapping[str, Bounds], env: Mapping[str, Any]) -> np.ndarray | None:
    """`e` at every point of `env` (numpy int64 arrays that broadcast together, or ints), whose values lie
    within `ranges` (inclusive); None when int64 cannot promise `evaluate`'s exact results there."""
    if e._tree is None:
        return None
    try:
        _bounds(e._tree, ranges)
    except (_NotExact, KeyError):
        return None
    with np.errstate(all="raise"):
        try:
            return np.asarray(_grid(e._tree, env), dtype=np.int64)
        except (FloatingPointError, _NotExact):
            return None
