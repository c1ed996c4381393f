"""``langgraph-repo store`` and what validate and fsck say about store files."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from helpers import cli, cli_in_process, one_line_error
from langgraph_checkpoint_repo import RepoSaver, RepoStore
from langgraph_checkpoint_repo.core.checks import Validator, fsck, repair
from langgraph_checkpoint_repo.core.threads import ThreadStore


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root with a saver's thread and a store's items side by side."""
    root = tmp_path / "root"
    from graphs import cfg, chain_graph

    chain_graph(RepoSaver(root, durable=False)).invoke({"log": []}, cfg("t"))
    store = RepoStore(root, durable=False)
    store.put(("users", "alice"), "prefs", {"theme": "dark", "n": 1})
    store.put(("users", "bob"), "prefs", {"theme": "light", "n": 2})
    store.put(("docs",), "readme", {"text": "hello"})
    return root


def test_ls_get_search_put_delete_round_trip(root: Path) -> None:
    assert cli_in_process("--root", root, "store", "ls").stdout.split() == [
        "docs",
        "users.alice",
        "users.bob",
    ]
    assert cli_in_process("--root", root, "store", "ls", "users", "--json").stdout.count('"users"') == 2
    got = cli_in_process("--root", root, "store", "get", "users.alice", "prefs")
    assert json.loads(got.stdout) == {"theme": "dark", "n": 1}
    found = cli_in_process(
        "--root", root, "store", "search", "users", "--filter", '{"n": {"$gte": 2}}', "--json"
    )
    assert [(i["namespace"], i["key"]) for i in json.loads(found.stdout)] == [(["users", "bob"], "prefs")]
    wrote = cli_in_process("--root", root, "store", "put", "users.carol", "prefs", '{"theme": "blue"}')
    assert wrote.exit_code == 0, wrote.stderr
    assert RepoStore(root).get(("users", "carol"), "prefs").value == {"theme": "blue"}  # type: ignore[union-attr]
    assert cli_in_process("--root", root, "store", "delete", "users.carol", "prefs").exit_code == 0
    assert RepoStore(root).get(("users", "carol"), "prefs") is None
    assert not (root / "store" / "users" / "carol").exists()


def test_put_refuses_a_stale_version_and_get_names_what_is_missing(root: Path) -> None:
    updated = RepoStore(root).get(("users", "alice"), "prefs").updated_at  # type: ignore[union-attr]
    ok = cli_in_process(
        "--root",
        root,
        "store",
        "put",
        "users.alice",
        "prefs",
        '{"v": 2}',
        "--if-updated-at",
        updated.isoformat(),
    )
    assert ok.exit_code == 0, ok.stderr
    stale = cli(
        root,
        "store",
        "put",
        "users.alice",
        "prefs",
        '{"v": 3}',
        "--if-updated-at",
        updated.isoformat(),
    )
    one_line_error(stale, 5, "changed since it was read", "users")
    missing = cli(root, "store", "get", "users.nobody", "prefs")
    one_line_error(missing, 3, "no item 'prefs'", "users.nobody")
    bad = cli(root, "store", "put", "a.b", "k", "[1, 2]")
    one_line_error(bad, 2, "JSON object")


def test_put_redacts_secrets_and_stores_dollar_keys_as_the_serializer_would(root: Path) -> None:
    key = "sk-ant-api03-" + "x1Y2z3" * 8
    value = json.dumps({"note": f"use {key}", "$odd": 1})
    assert cli_in_process("--root", root, "store", "put", "docs", "secret", value).exit_code == 0
    text = (root / "store" / "docs" / "secret.json").read_text()
    assert key not in text and "[REDACTED:anthropic-key]" in text
    assert RepoStore(root).get(("docs",), "secret").value == {  # type: ignore[union-attr]
        "note": "use [REDACTED:anthropic-key]",
        "$odd": 1,
    }


def test_sweep_removes_what_has_expired(root: Path) -> None:
    RepoStore(root).put(("tmp",), "k", {"v": 1}, ttl=1)
    later = (datetime.now(timezone.utc) + timedelta(hours=1)).isoformat()
    dry = cli_in_process("--root", root, "store", "sweep", "--dry-run", "--at", later)
    assert dry.stdout.split() == ["expired", "tmp", "k"]
    assert (root / "store" / "tmp" / "k.json").exists()
    done = cli_in_process("--root", root, "store", "sweep", "--at", later, "--json")
    assert json.loads(done.stdout)["removed"] == 1
    assert not (root / "store" / "tmp").exists()


def test_the_store_commands_never_import_langgraph(root: Path) -> None:
    code = (
        "import sys\n"
        "from langgraph_checkpoint_repo.cli import app\n"
        "for args in (['store','ls'], ['store','get','users.alice','prefs'], ['store','search','users'],\n"
        "             ['store','put','x','k','{\"a\": 1}'], ['store','delete','x','k'], ['store','sweep']):\n"
        f"    try: app(args=['--root', {str(root)!r}, *args], prog_name='langgraph-repo')\n"
        "    except SystemExit as exc: assert not exc.code, (args, exc.code)\n"
        "graph = ('langgraph', 'langchain_core', 'langchain')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in graph))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_validate_and_fsck_check_store_files_beside_the_threads(root: Path) -> None:
    checked = cli(root, "validate")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "3 store items" in checked.stderr and "checkpoints valid" in checked.stderr
    item = root / "store" / "users" / "alice" / "prefs.json"
    doc = json.loads(item.read_text())
    doc["value"] = "not an object"
    item.write_text(json.dumps(doc))
    (root / "store" / "docs" / "notes.txt").write_text("hi")
    planted = root / "store" / "docs" / "planted.json"
    planted.write_text((root / "store" / "users" / "bob" / "prefs.json").read_text())
    problems = {(Path(p.path).name, p.pointer) for p in Validator(root).run()}
    assert ("prefs.json", "/value") in problems
    assert ("notes.txt", "/") in problems
    assert ("planted.json", "/key") in problems
    one = cli(root, "validate", item)
    assert one.returncode == 1 and "prefs.json: /value" in one.stdout
    assert cli(root, "validate", root / "store" / "users" / "bob" / "prefs.json").returncode == 0


def test_fsck_removes_the_store_s_temp_files_and_empty_folders_only(root: Path) -> None:
    temp = root / "store" / "users" / "alice" / ".prefs.json.0123456789ab.tmp"
    temp.write_text("{")
    (root / "store" / "gone" / "deeper").mkdir(parents=True)
    foreign = root / "store" / "docs" / ".hidden"
    foreign.write_text("mine")
    store = ThreadStore(root)
    found = {(f.kind, Path(f.path).name) for f in fsck(store)}
    assert {("temp", temp.name), ("empty-folder", "gone"), ("foreign", ".hidden")} <= found
    repair(store, fsck(store))
    assert not temp.exists() and not (root / "store" / "gone").exists() and foreign.exists()
    assert RepoStore(root).get(("users", "alice"), "prefs") is not None
