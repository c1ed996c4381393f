"""The bytes on disk, pinned: every committed root migrated and re-put gives the golden copies.

Issue 36 moves the format behind one seam without changing a byte on disk; this is the check
that it did not. Each committed root (tests/fixtures/v1 ... v4, written by the release that
introduced each format; docs/example-state, written by the docs' real graphs; tests/golden/sources,
written by real graphs for what those do not hold: inputs given as a dict and as a pair, a
pruned thread with its base file) is copied,
migrated, and every thread of it re-put through the saver's own put path (``copy_threads``:
``list``, then ``put``/``put_writes`` under the same ids; store items through
``RepoStore.put``), then pruned (keep_latest). The migrated, re-put and pruned files and what
``list``/``get_tuple``/the store read from them must equal tests/golden/<source>/, byte for
byte. tests/golden/make.py makes those files and says when making them again is legitimate.
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"


def _load_make() -> Any:
    spec = importlib.util.spec_from_file_location("golden_make", GOLDEN / "make.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


make = _load_make()


@pytest.fixture(scope="module", params=sorted(make.SOURCES), ids=str)
def made(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Any]:
    """One source migrated and re-put (once per source for the tests below)."""
    name: str = request.param
    return name, make.make(name, tmp_path_factory.mktemp(f"golden-{name}"))


def differences(expected: dict[str, bytes], got: dict[str, bytes], lines: int = 40) -> str:
    """Which files differ from the golden ones, and the first changed lines of the first."""
    added = sorted(set(got) - set(expected))
    removed = sorted(set(expected) - set(got))
    changed = sorted(rel for rel in set(got) & set(expected) if got[rel] != expected[rel])
    if not (added or removed or changed):
        return ""
    out = [f"added: {added}", f"removed: {removed}", f"changed: {changed}"]
    if changed:
        first = changed[0]
        diff = difflib.unified_diff(
            expected[first].decode(errors="replace").splitlines(),
            got[first].decode(errors="replace").splitlines(),
            f"golden/{first}",
            f"written/{first}",
            lineterm="",
        )
        out.extend(list(diff)[:lines])
    return "\n".join(out)


def test_every_committed_root_has_a_golden_copy() -> None:
    """A new fixture tree (a new format) or a new example state is pinned too: the sources are
    every tests/fixtures/v<N>, every root under docs/example-state and under tests/golden/sources
    (what those do not hold), and each has its golden folder; none is left for a source that
    is gone."""
    fixtures = {p for p in (HERE / "fixtures").iterdir() if p.is_dir() and p.name.startswith("v")}
    states = {p for p in make.STATE.iterdir() if p.is_dir() and p != make.PROJECT}
    own = {p for p in (GOLDEN / "sources").iterdir() if p.is_dir()}
    used = {folder for folders in make.SOURCES.values() for folder in folders}
    assert fixtures | states | own == used
    folders = {p.name for p in GOLDEN.iterdir() if p.is_dir() and p.name not in ("__pycache__", "sources")}
    assert folders == set(make.SOURCES)
    assert all((GOLDEN / name / "reput.txt").is_file() for name in make.SOURCES)


def test_migrating_gives_the_golden_bytes(made: tuple[str, Any]) -> None:
    """An older root migrates to exactly the golden files; a current one is left byte for byte
    as committed (migrate rewrites nothing it need not)."""
    name, got = made
    golden = GOLDEN / name / "migrated.txt"
    expected = make.unpack(golden.read_bytes()) if golden.is_file() else got.source
    assert got.migrated != got.source or not golden.is_file(), f"{golden} is stale: nothing migrates"
    problems = differences(expected, got.migrated)
    assert not problems, f"{name}: migrate wrote other bytes than {golden}:\n{problems}"


def test_reputting_gives_the_golden_bytes(made: tuple[str, Any]) -> None:
    """Every file the saver (and the store) writes when the migrated root is put again is the
    golden one, byte for byte (ids and times the put mints stand in for themselves: make.py)."""
    name, got = made
    golden = GOLDEN / name / "reput.txt"
    problems = differences(make.unpack(golden.read_bytes()), got.reput)
    assert not problems, f"{name}: the re-put wrote other bytes than {golden}:\n{problems}"


def test_the_migrated_and_reput_roots_read_as_the_golden_reads(made: tuple[str, Any]) -> None:
    """``list`` (its order, each checkpoint whole: metadata, versions, parent, values, pending
    writes), ``get_tuple`` by id and latest, and the store's items read from the migrated root
    as the golden reads say; from the re-put root, the latest checkpoint of every thread and
    namespace and the items (but their times, which the re-put stamps) read the same."""
    name, got = made
    expected = json.loads((GOLDEN / name / "reads.json").read_bytes())
    migrated = json.loads(make.dumps(got.migrated_reads))
    assert migrated == expected, f"{name}: the migrated root reads other than {GOLDEN / name / 'reads.json'}"
    reput = json.loads(json.dumps(got.reput_reads))
    assert make.unlike(expected, reput["latest"]) == [], f"{name}: the re-put root reads other"
    assert not make.store_unlike(expected, reput["store"]), f"{name}: the re-put items read other"


def test_pruning_the_reput_root_gives_the_golden_bytes_and_reads_as_before(made: tuple[str, Any]) -> None:
    """``prune`` (keep_latest) of every thread of the re-put root writes exactly the golden
    files (base files, ``values/`` files, what it keeps), and the latest checkpoint of every
    thread and namespace reads as it did before (as in the golden reads)."""
    name, got = made
    golden = GOLDEN / name / "pruned.txt"
    problems = differences(make.unpack(golden.read_bytes()), got.pruned)
    assert not problems, f"{name}: prune wrote other bytes than {golden}:\n{problems}"
    expected = json.loads((GOLDEN / name / "reads.json").read_bytes())
    pruned = json.loads(json.dumps(got.pruned_reads))
    assert pruned and make.unlike(expected, pruned) == [], f"{name}: prune changed what these read"


def test_a_golden_copy_holds_each_file_byte_for_byte() -> None:
    """The packing the goldens use gives back every file exactly, whatever its bytes (no
    final newline, a header-like line inside, an empty file)."""
    files = {"a.json": b'{"x": 1}', "b/c.json": b"=== d.json 3\nabc\n\n", "e": b""}
    assert make.unpack(make.pack(files)) == files
