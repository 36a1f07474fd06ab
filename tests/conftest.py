"""Fixtures shared by every test folder; the helpers themselves live in the `helpers` package."""

from __future__ import annotations

import pytest

from helpers.paths import run_cli


@pytest.fixture
def cli():
    return run_cli
