"""Collectives built by `library._instantiate_fast` (few evaluations) against the loop that evaluates every
expression at every (rank, chunk) point: the same Collective, or the same error."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smtcoll import expr, library
from smtcoll.errors import ModelError

VARS = ["rank", "chunk", "ranks", "chunks", "root"]
ATOMS = st.one_of(st.integers(-6, 6).map(str), st.sampled_from([*VARS, "true", "false"]))


def _combine(children):
    binary = st.tuples(children, st.sampled_from(["+", "-", "*", "//", "%", "==", "!=", "<", "<=", "and", "or"]),
                       children).map(lambda t: f"({t[0]} {t[1]} {t[2]})")
    unary = st.tuples(st.sampled_from(["-", "not "]), children).map(lambda t: f"({t[0]}{t[1]})")
    ifexp = st.tuples(children, children, children).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})")
    return st.one_of(binary, unary, ifexp)


TERMS = st.recursive(ATOMS, _combine, max_leaves=8)
# relations, with the `rank == E and ...` shapes the fast path looks for
RELATIONS = st.one_of(
    TERMS,
    st.tuples(TERMS, st.booleans()).map(lambda t: f"rank == {t[0]}" if t[1] else f"{t[0]} == rank"),
    st.tuples(TERMS, TERMS).map(lambda t: f"rank == {t[0]} and {t[1]}"),
    st.tuples(TERMS, TERMS).map(lambda t: f"{t[1]} and rank == {t[0]}"),
)


def _build(spec, ranks, root, chunks=1):
    try:
        return spec.instantiate(ranks, root, chunks)
    except ModelError as e:
        return str(e)


def _both(spec, ranks, root, chunks=1):
    fast = _build(spec, ranks, root, chunks)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(library, "_instantiate_fast", lambda *args: None)
        slow = _build(spec, ranks, root, chunks)
    return fast, slow


@pytest.mark.parametrize("name", sorted(library.COLLECTIVES))
@pytest.mark.parametrize("ranks, chunks", [(1, 1), (2, 1), (5, 1), (8, 3), (16, 1)])
def test_builtins_identical_to_the_loop(name, ranks, chunks):
    spec = library.COLLECTIVES[name]
    for root in range(ranks) if spec.rooted else [None]:
        fast, slow = _both(spec, ranks, root, chunks)
        assert not isinstance(fast, str) and fast == slow


@settings(max_examples=400, deadline=None)
# an address with `rank` takes the loop in both (the loop itself fails on it: reported separately)
@given(RELATIONS, RELATIONS, st.one_of(TERMS, st.just("chunk")).filter(lambda t: "rank" not in t),
       st.integers(1, 5), st.integers(0, 4))
def test_spec_collectives_identical_to_the_loop(pre, post, address, ranks, root):
    spec = library.CollectiveSpec("custom", "ranks + 1", pre, post, address, True)
    fast, slow = _both(spec, ranks, root % ranks)
    assert fast == slow


def test_rank_equals_finds_the_rank_free_side():
    vars_ = set(VARS)
    assert expr.rank_equals(expr.parse("rank == chunk // ranks", vars_)).text == "chunk // ranks"
    assert expr.rank_equals(expr.parse("chunk % ranks == rank and root > 0", vars_)).text == "chunk % ranks"
    for text in ("rank == rank - chunk", "rank != chunk", "root > 0 and rank == chunk", "rank == chunk == 1"):
        assert expr.rank_equals(expr.parse(text, vars_)) is None
