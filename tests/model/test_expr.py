import pytest

from smtcoll import expr
from smtcoll.errors import ModelError

VARS = {"rank", "chunk", "ranks", "chunks", "root"}


@pytest.mark.parametrize("text, env, value", [
    ("rank == chunk % ranks", {"rank": 1, "chunk": 5, "ranks": 4}, 1),
    ("rank == chunk // ranks", {"rank": 1, "chunk": 5, "ranks": 4}, 1),
    ("true", {}, 1),
    ("not (rank < 2) and chunk != 3 or false", {"rank": 2, "chunk": 4}, 1),
    ("0 <= rank < ranks - 1", {"rank": 3, "ranks": 4}, 0),
    ("chunk * 2 + 1 if rank == root else -1", {"chunk": 3, "rank": 0, "root": 0}, 7),
])
def test_evaluates(text, env, value):
    assert expr.parse(text, VARS).evaluate(env) == value


@pytest.mark.parametrize("text, message", [
    ('__import__("os").system("true")', "Call is not allowed"),
    ("rank.__class__", "Attribute is not allowed"),
    ("rank / 2", "use // for integer division"),
    ("2 ** 100000", "'**' is not allowed"),
    ("foo + 1", "unknown name 'foo'"),
    ("rank +", "bad expression"),
    ("[x for x in ()]", "is not allowed"),
    ("lambda: 0", "is not allowed"),
    ("1" + " + 1" * 100, "too complex"),
    ("1" * 600, "longer than"),
])
def test_rejects(text, message):
    with pytest.raises(ModelError, match=message.replace("(", r"\(").replace("*", r"\*")):
        expr.parse(text, VARS, "pre")


def test_division_by_zero_names_values():
    e = expr.parse("chunk % (rank - 1)", VARS)
    with pytest.raises(ModelError, match=r"division by zero.*rank=1"):
        e.evaluate({"chunk": 1, "rank": 1})
