"""Hostile store files: each is refused by RepoStore and reported by validate, naming the file,
and breaks only its own item.

Every case damages one item that RepoStore wrote (in a namespace of its own) the way a bad
merge, a hand edit or a hostile pull request could: cut JSON, duplicate keys, a newer or older
``schema_version``, the wrong kind, a file over the read limit, invalid UTF-8, a planted type, a
key or namespace that is not the file's place, an item planted in another namespace's folder,
symlinks to files and folders outside the root. Then: a ``get`` and a ``search`` of that
namespace raise an error naming the file; ``Validator`` (``langgraph-repo validate``) names it;
and the healthy items beside it still read and write.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from langgraph_checkpoint_repo import (
    FileFormatError,
    RepoCheckpointError,
    RepoStore,
    SchemaVersionError,
    UnrevivableValueError,
)
from langgraph_checkpoint_repo.core.caches import RACY_NS
from langgraph_checkpoint_repo.core.checks import Validator
from langgraph_checkpoint_repo.core.jsonread import MAX_FILE_BYTES

GOOD = ("good",)


def edit_doc(change: Callable[[dict], None]) -> Callable[[Path, Path], None]:  # type: ignore[type-arg]
    def damage(path: Path, outside: Path) -> None:
        doc = json.loads(path.read_text())
        change(doc)
        path.write_text(json.dumps(doc))

    return damage


def huge(path: Path, outside: Path) -> None:
    with path.open("r+b") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)  # sparse: no disk used


def symlinked(path: Path, outside: Path) -> None:
    target = outside / "elsewhere.json"
    target.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(target)


def symlinked_folder(path: Path, outside: Path) -> None:
    folder = outside / "folder"
    shutil.copytree(path.parent, folder)
    shutil.rmtree(path.parent)
    path.parent.symlink_to(folder, target_is_directory=True)


def planted_from_good(path: Path, outside: Path) -> None:
    """The healthy item's file copied under this namespace's folder: it names ("good",)."""
    good = path.parents[1] / "good" / "k.json"
    path.write_bytes(good.read_bytes())


# case -> (damage, the words the error and the validate line carry)
CASES: dict[str, tuple[Callable[[Path, Path], None], str]] = {
    "truncated-json": (lambda p, o: p.write_bytes(p.read_bytes()[:-20]), "invalid JSON"),
    "duplicate-key": (
        lambda p, o: p.write_text(p.read_text().replace('"kind"', '"key": "k", "kind"', 1)),
        "duplicate key",
    ),
    "nan-literal": (lambda p, o: p.write_text(p.read_text().replace('"v": 1', '"v": NaN')), "NaN"),
    "invalid-utf8": (lambda p, o: p.write_bytes(p.read_bytes().replace(b'"v"', b'"\xff"')), "not UTF-8"),
    "newer-version": (edit_doc(lambda d: d.update(schema_version=99)), "newer release"),
    "older-version": (edit_doc(lambda d: d.update(schema_version=2)), "migrate"),
    "wrong-kind": (edit_doc(lambda d: d.update(kind="object")), "expected kind 'item'"),
    "value-not-object": (edit_doc(lambda d: d.update(value=[1, 2])), "/value"),
    "bad-timestamp": (edit_doc(lambda d: d.update(updated_at="2026-13-45T00:00:00+00:00")), "not a date"),
    "key-not-its-name": (edit_doc(lambda d: d.update(key="other")), "does not match the file name"),
    "namespace-not-its-folder": (
        edit_doc(lambda d: d.update(namespace=["elsewhere"])),
        "does not match its folders",
    ),
    "planted-from-another-namespace": (planted_from_good, "does not match its folders"),
    "planted-type": (
        edit_doc(lambda d: d.update(value={"v": {"$type": ["os", "system"], "$arg": "echo pwned"}})),
        "os.system",
    ),
    "over-the-size-limit": (huge, "over the limit"),
    "symlinked-file": (symlinked, "symlink"),
    "symlinked-folder": (symlinked_folder, "symlink"),
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    base = tmp_path_factory.mktemp("store-hostile")
    root, outside = base / "root", base / "outside"
    outside.mkdir()
    store = RepoStore(root, durable=False)
    store.put(GOOD, "k", {"v": 1, "text": "healthy"})
    paths = {}
    for case, (damage, _) in CASES.items():
        store.put((case,), "k", {"v": 1})
        path = store.path((case,), "k")
        case_outside = outside / case
        case_outside.mkdir()
        damage(path, case_outside)
        paths[case] = path
    return root, paths


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_item_fails_get_and_search_with_an_error_naming_it(
    hostile: tuple[Path, dict[str, Path]], case: str
) -> None:
    root, paths = hostile
    store = RepoStore(root)
    words = CASES[case][1]
    for read in (lambda: store.get((case,), "k"), lambda: store.search((case,))):
        with pytest.raises(RepoCheckpointError) as caught:
            read()
        assert words in str(caught.value), str(caught.value)
        named = str(paths[case]) if "folder" not in case else str(paths[case].parent)
        assert named in str(caught.value) or str(paths[case].parent) in str(caught.value), str(caught.value)
    if case in ("newer-version", "older-version"):
        assert isinstance(caught.value, SchemaVersionError)
    if case == "planted-type":
        assert isinstance(caught.value, UnrevivableValueError)


def test_validate_names_every_hostile_item_and_nothing_else(hostile: tuple[Path, dict[str, Path]]) -> None:
    root, paths = hostile
    problems = Validator(root).run()
    named = {Path(p.path) for p in problems}
    for case, path in paths.items():
        assert path in named or path.parent in named, (case, [p.line() for p in problems])
    assert not any("good" in Path(p.path).parts for p in problems)
    words = {
        case: [p.line() for p in problems if Path(p.path) in (path, path.parent)]
        for case, path in paths.items()
    }
    for case, lines in words.items():
        assert any(CASES[case][1] in line for line in lines), (case, lines)


def test_the_healthy_item_reads_and_writes_beside_every_hostile_one(
    hostile: tuple[Path, dict[str, Path]],
) -> None:
    root, _ = hostile
    store = RepoStore(root, durable=False)
    assert store.get(GOOD, "k").value == {"v": 1, "text": "healthy"}  # type: ignore[union-attr]
    assert [i.key for i in store.search(GOOD)] == ["k"]
    store.put(GOOD, "k2", {"v": 2})
    assert store.get(GOOD, "k2").value == {"v": 2}  # type: ignore[union-attr]
    store.delete(GOOD, "k2")


def test_nothing_a_file_names_is_constructed_or_called(
    hostile: tuple[Path, dict[str, Path]], capfd: pytest.CaptureFixture[str]
) -> None:
    root, _ = hostile
    with pytest.raises(UnrevivableValueError):
        RepoStore(root).get(("planted-type",), "k")
    assert "pwned" not in capfd.readouterr().out


def test_an_item_planted_in_a_namespace_folder_below_the_store_is_refused(tmp_path: Path) -> None:
    """``store/store/good/k.json`` naming ("good",): read as ("store", "good"), refused."""
    store = RepoStore(tmp_path / "root", durable=False)
    store.put(GOOD, "k", {"v": 1})
    planted = store.root / "store" / "store" / "good" / "k.json"
    planted.parent.mkdir(parents=True)
    planted.write_bytes(store.path(GOOD, "k").read_bytes())
    with pytest.raises(RepoCheckpointError, match="live at") as caught:
        store.get(("store", "good"), "k")
    assert str(planted) in str(caught.value)
    with pytest.raises(RepoCheckpointError, match="live at"):
        store.search(("store",))
    assert store.get(GOOD, "k").value == {"v": 1}  # type: ignore[union-attr]


def test_no_write_goes_through_a_symlinked_folder_or_lock_file(tmp_path: Path) -> None:
    store = RepoStore(tmp_path / "root", durable=False)
    store.put(("ns",), "k", {"v": 1})
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = store.path(("ns",), "k").parent
    shutil.rmtree(folder)
    folder.symlink_to(outside, target_is_directory=True)
    with pytest.raises(RepoCheckpointError, match="leads outside"):
        store.put(("ns",), "k", {"v": 2})
    with pytest.raises(RepoCheckpointError, match="symlink"):
        store.delete(("ns",), "k")
    assert list(outside.iterdir()) == []
    folder.unlink()
    store.put(("ns",), "k", {"v": 3})
    locks = store.root / ".cache" / "locks" / "store"
    (lock,) = locks.iterdir()
    victim = outside / "victim"
    victim.write_text("keep me")
    lock.unlink()
    lock.symlink_to(victim)
    with pytest.raises(RepoCheckpointError, match=r"lock file .* is a symlink"):
        RepoStore(store.root).put(("ns",), "k", {"v": 4})
    assert victim.read_text() == "keep me"


def test_a_store_folder_that_is_a_symlink_is_never_read_or_written(tmp_path: Path) -> None:
    other = RepoStore(tmp_path / "other", durable=False)
    other.put(("ns",), "k", {"v": "someone else's"})
    root = tmp_path / "root"
    RepoStore(root, durable=False).put(("mine",), "k", {"v": 1})
    shutil.rmtree(root / "store")
    (root / "store").symlink_to(tmp_path / "other" / "store", target_is_directory=True)
    store = RepoStore(root, durable=False)
    for call in (lambda: store.get(("ns",), "k"), lambda: store.search(()), lambda: store.list_namespaces()):
        with pytest.raises(RepoCheckpointError, match="symlink"):
            call()
    with pytest.raises(RepoCheckpointError, match="symlink"):
        store.put(("ns",), "k", {"v": "overwritten"})
    assert other.get(("ns",), "k").value == {"v": "someone else's"}  # type: ignore[union-attr]
    assert any("symlink" in p.line() for p in Validator(root).run())


def test_a_value_nested_deeper_than_a_read_can_take_is_refused_naming_the_file(tmp_path: Path) -> None:
    store = RepoStore(tmp_path / "root", durable=False)
    store.put(("ns",), "k", {"v": 1})
    path = store.path(("ns",), "k")
    deep = "[" * (sys.getrecursionlimit() + 100) + "]" * (sys.getrecursionlimit() + 100)
    path.write_text(path.read_text().replace('"v": 1', f'"v": {deep}'))
    with pytest.raises(RepoCheckpointError) as caught:
        RepoStore(store.root).get(("ns",), "k")
    assert str(path) in str(caught.value)
    assert os.path.exists(path)


@pytest.mark.parametrize("swapped", ["store", "store/users", "store/users/ada"])
def test_a_namespace_folder_swapped_for_a_symlink_is_refused_by_a_warm_store_as_by_a_fresh_one(
    tmp_path: Path, swapped: str
) -> None:
    """An item a running store read is kept by its file's stat key, which a folder on the way
    swapped for a symlink to it (the same files behind it) leaves as it was: the kept item is
    served only while its folder lies in the root with no symlink on the way (Files._read_doc),
    so the warm store refuses the link by name, as a fresh one does."""
    root = tmp_path / ".langgraph"
    warm = RepoStore(root)
    warm.put(("users", "ada"), "k1", {"v": 1})
    warm.get(("users", "ada"), "k1")
    time.sleep(2 * RACY_NS / 1e9)  # settled: kept by its key from here on
    assert warm.get(("users", "ada"), "k1").value == {"v": 1}  # type: ignore[union-attr]
    folder = root / swapped
    os.rename(folder, tmp_path / "elsewhere")
    os.symlink(tmp_path / "elsewhere", folder)
    for store in (warm, RepoStore(root)):
        with pytest.raises(FileFormatError, match="symlink") as info:
            store.get(("users", "ada"), "k1")
        assert str(folder) in str(info.value)
