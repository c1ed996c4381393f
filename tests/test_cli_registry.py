"""The command registry (cli/registry.py): ``langgraph-repo`` lists its commands from the
registry and imports a command's module only when that command runs.

The registry is checked against the functions it names, so a mistyped target or a help line
that no longer matches its docstring fails here, not when a user runs that command.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from typer.core import TyperCommand
from typer.main import get_command
from typer.testing import CliRunner

from helpers import cli_env
from langgraph_checkpoint_repo.cli import app, registry

CLI = "langgraph_checkpoint_repo.cli"
#: the modules that hold commands: running one command imports its own and no other
COMMAND_MODULES = sorted({c.target.partition(":")[0] for c in registry.COMMANDS})


def first_sentence(doc: str) -> str:
    """What click's command list can show of a help text at any width: its first paragraph,
    up to the first word that ends a sentence (``click.utils.make_default_short_help``)."""
    words = doc.split("\n\n")[0].split()
    ends = [i for i, word in enumerate(words) if word.endswith(".")]
    return " ".join(words[: ends[0] + 1] if ends else words)


def registry_problems(commands: tuple[registry.Command, ...]) -> list[str]:
    """What is wrong with registry entries: a target that does not import or is not a function
    with a docstring, a help line that is not that docstring's first sentence, a name twice in
    a group, a group no one declared."""
    problems = []
    groups = {g.name for g in registry.GROUPS}
    seen: set[tuple[str | None, str]] = set()
    for command in commands:
        where = f"{command.group or 'top'} {command.name}"
        if (command.group, command.name) in seen:
            problems.append(f"{where}: named twice")
        seen.add((command.group, command.name))
        if command.group is not None and command.group not in groups:
            problems.append(f"{where}: no group {command.group!r}")
        try:
            function = registry.load(command)
        except (ImportError, AttributeError, TypeError) as exc:
            problems.append(f"{where}: {command.target} does not resolve ({exc})")
            continue
        doc = inspect.getdoc(function) or ""
        if command.help != first_sentence(doc):
            problems.append(f"{where}: help {command.help!r} is not its docstring's {first_sentence(doc)!r}")
    return problems


def test_every_registered_command_resolves_to_its_function_and_help_line() -> None:
    assert registry_problems(registry.COMMANDS) == []
    for command in registry.COMMANDS:
        assert callable(registry.load(command))


SYNC = next(c for c in registry.COMMANDS if c.name == "sync")


@pytest.mark.parametrize(
    ("broken", "said"),
    [
        (replace(SYNC, target="no_such_module:sync"), "does not resolve"),
        (replace(SYNC, target="server:no_such_function"), "does not resolve"),
        (replace(SYNC, target="server:BATCH"), "does not resolve"),  # not a function
        (replace(SYNC, help="Not its docstring."), "is not its docstring's"),
        (replace(SYNC, group="no-such-group"), "no group"),
    ],
    ids=["missing module", "missing function", "not callable", "stale help", "unknown group"],
)
def test_a_broken_registry_entry_is_found_by_the_check(broken: registry.Command, said: str) -> None:
    problems = registry_problems((broken,))
    assert len(problems) == 1 and said in problems[0], problems


def test_a_name_registered_twice_in_a_group_is_found_by_the_check() -> None:
    assert registry_problems((SYNC, SYNC)) == ["server sync: named twice"]
    assert registry_problems((SYNC, replace(SYNC, group=None))) == []  # another group's name


@pytest.mark.parametrize("group", [None, *(g.name for g in registry.GROUPS)])
def test_help_lists_every_registered_command_in_the_registrys_order(group: str | None) -> None:
    args = [group, "--help"] if group else ["--help"]
    result = CliRunner().invoke(app, args, prog_name="langgraph-repo")
    assert result.exit_code == 0, result.output
    listed = result.output.split("Commands:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in listed if line.startswith("  ") and line[2] != " "] == [
        e.name for e in registry.entries(group)
    ]


@pytest.mark.parametrize("limit", [20, 35, 45, 63, 80, 200])
def test_the_help_lines_shorten_as_the_built_commands_help_does(limit: int) -> None:
    """The list ``--help`` prints from the registry is the one typer would print from the
    built commands, at any width."""
    top = get_command(app)
    ctx = top.make_context("langgraph-repo", ["threads"], resilient_parsing=True)
    for entry in registry.entries(None):
        built = top.get_command(ctx, entry.name)
        assert built is not None
        shown = TyperCommand(name=entry.name, help=entry.help).get_short_help_str(limit)
        assert shown == built.get_short_help_str(limit), entry.name
        for sub in registry.entries(entry.name) if isinstance(entry, registry.Group) else []:
            inner = built.get_command(ctx, sub.name)
            assert TyperCommand(name=sub.name, help=sub.help).get_short_help_str(limit) == (
                inner.get_short_help_str(limit)
            ), sub.name


def loaded_command_modules(*args: str) -> tuple[int, list[str]]:
    """The exit code of ``langgraph-repo ARGS`` in a fresh interpreter, and which command
    modules of cli/ it imported."""
    probe = textwrap.dedent(
        f"""
        import contextlib, io, json, sys
        from langgraph_checkpoint_repo.cli import app
        code = 0
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                app({list(args)!r}, prog_name="langgraph-repo")
            except SystemExit as done:
                code = done.code
        modules = {COMMAND_MODULES!r}
        print(json.dumps([code, [m for m in modules if "{CLI}." + m in sys.modules]]))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=cli_env(), timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    code, modules = json.loads(proc.stdout.splitlines()[-1])
    return code, modules


def test_importing_the_app_and_its_help_import_no_command_module() -> None:
    assert loaded_command_modules("--help") == (0, [])
    assert loaded_command_modules("store", "--help") == (0, [])


def test_running_a_command_imports_its_module_and_no_other() -> None:
    """Each command module's first command, ``--help``, in one fresh interpreter: the command
    modules a run imported are forgotten before the next, so each run shows what it imports
    itself (one process for all, not one each: the suite's time)."""
    words = {}
    for module in COMMAND_MODULES:
        command = next(c for c in registry.COMMANDS if c.target.startswith(f"{module}:"))
        words[module] = [command.group, command.name] if command.group else [command.name]
    probe = textwrap.dedent(
        f"""
        import contextlib, io, json, sys
        from langgraph_checkpoint_repo.cli import app
        modules, found = {COMMAND_MODULES!r}, {{}}
        for module, words in {words!r}.items():
            code = 0
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                try:
                    app([*words, "--help"], prog_name="langgraph-repo")
                except SystemExit as done:
                    code = done.code
            found[module] = [code, [m for m in modules if "{CLI}." + m in sys.modules]]
            for m in modules:
                sys.modules.pop("{CLI}." + m, None)
        print(json.dumps(found))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=cli_env(), timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout.splitlines()[-1])
    assert found == {m: [0, [m]] for m in COMMAND_MODULES}


def test_a_command_that_runs_whole_imports_only_its_module(tmp_path: Path) -> None:
    """Beyond ``--help``: ``threads`` reads a root, with the imports its module makes at its top."""
    root = tmp_path / "root"
    (root / "threads").mkdir(parents=True)
    code, modules = loaded_command_modules("--root", str(root), "threads", "--json")
    assert (code, modules) == (0, ["read"])
