"""What a user's tools see of the installed package: the built wheel, not the checkout."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent


def test_the_wheel_carries_the_py_typed_marker_and_the_schemas(tmp_path: Path) -> None:
    """PEP 561: without py.typed a user's mypy treats the package as untyped (Any everywhere)."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(PROJECT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = tmp_path.glob("langgraph_checkpoint_repo-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "langgraph_checkpoint_repo/py.typed" in names
    assert "langgraph_checkpoint_repo/schemas/checkpoint.schema.json" in names
    assert "langgraph_checkpoint_repo/core/index.py" in names
    assert "langgraph_checkpoint_repo/readmodel/reader.py" in names
