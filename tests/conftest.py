"""Shared test fixtures: the repository root and the numaplace package on sys.path."""
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow"))


@pytest.fixture(scope="session")
def repo():
    return REPO
