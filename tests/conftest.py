"""Fixtures most test modules build the same way.

pytest puts this folder on sys.path (rootdir-relative "prepend" import mode), so test
modules import the shared builders as ``graphs`` and ``helpers``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from langgraph_checkpoint_repo import RepoSaver


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root the test's saver creates (nothing exists there yet)."""
    return tmp_path / "root"


@pytest.fixture
def saver(root: Path) -> RepoSaver:
    """A saver on ``root`` that skips fsync: the tests do not pull the plug."""
    return RepoSaver(root, durable=False)
