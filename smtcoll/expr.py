"""A small whitelisted expression language for spec files (never `eval`).

Grammar: integers, `true`/`false`, the variables a context allows (`rank`, `chunk`, `ranks`,
`chunks`, `root`), `+ - * // %`, unary `-`, comparisons (chained), `and`/`or`/`not`, parentheses and
`a if cond else b`. Python's parser builds the tree; only the node types below are accepted.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping

import attrs

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
    tree: ast.expr | None = attrs.field(default=None, eq=False, repr=False)  # the checked syntax tree

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


def rank_equals(e: Expr) -> Expr | None:
    """E when `e` is `rank == E` or `rank == E and ...` (or `E == rank`) with E free of `rank`: then `e`
    is false, without evaluating anything else, at every rank but E's value."""
    node = e.tree
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        node = node.values[0]
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq)):
        return None
    left, right = node.left, node.comparators[0]
    for side, other in ((left, right), (right, left)):
        if isinstance(side, ast.Name) and side.id == "rank":
            used: set[str] = set()
            fn = _compile(other, frozenset(e.variables), used, "", e.text)
            return None if "rank" in used else Expr(ast.unparse(other), frozenset(used), fn, other)
    return None
