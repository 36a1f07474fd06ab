"""Fixtures shared by every test folder; the helpers themselves live in the `helpers` package."""

from __future__ import annotations

import pytest
from helpers.paths import run_cli


@pytest.fixture
def cli():
    return run_cli


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test whose corpus was required but is missing or empty fails: it must not pass with nothing checked."""
    marker = item.get_closest_marker("corpus_missing")
    if marker is not None:
        pytest.fail(marker.args[0], pytrace=False)
