"""Values a test knows are present: a program read from a file types every attribute as optional."""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def known(value: T | None) -> T:
    """`value`, which the file declares (the test fails when it does not)."""
    assert value is not None, "an attribute the test relies on is missing"
    return value
