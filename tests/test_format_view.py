"""The git diff driver's view lives in the format package (core/format/view.py), and stays light.

git starts the driver once per file it prints, so the view the driver takes from the format
package (view.py, onefile.py, inline.py, markers.py, fields.py, messages.py) may import the
standard library and the light core only: the format's codec modules (objects.py, tree.py)
load orjson and ormsgpack, and the schema validator costs about 40 ms to import (validation.py
imports it when it first validates); a view that reached for them would pay for that on every
file of every ``git diff``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from graphs import cfg, chain_graph
from langgraph_checkpoint_repo import RepoSaver

HEAVY = ("orjson", "ormsgpack", "jsonschema_rs", "xxhash", "filelock")


def test_the_drivers_view_loads_no_compiled_codec_nor_the_schema_validator(tmp_path: Path) -> None:
    root = tmp_path / "root"
    chain_graph(RepoSaver(root, durable=False)).invoke({"log": []}, cfg("t"))
    path = sorted((root / "threads" / "t" / "checkpoints").glob("*.json"))[-1]
    code = (
        "import sys\n"
        "from langgraph_checkpoint_repo.review.textconv import main\n"
        "main([sys.argv[1]])\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    loaded = set(proc.stderr.split())
    assert proc.stdout.startswith("checkpoint ") and "log: " in proc.stdout
    assert "langgraph_checkpoint_repo.core.format.view" in loaded  # the guard sees the view's imports
    assert sorted(m for m in loaded if m.split(".")[0] in HEAVY) == []
    heavy_format = {f"langgraph_checkpoint_repo.core.format.{m}" for m in ("objects", "tree")}
    assert loaded & heavy_format == set()
