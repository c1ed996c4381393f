"""What the command line imports: LangGraph only in the commands that read values.

Importing LangGraph takes seconds; ``langgraph-repo --help`` and every command's ``--help``
must not wait for it (docs/cli.md, "Speed of the CLI"). Each check runs in a fresh
interpreter and looks at ``sys.modules``; no timing is asserted here (bench/ measures it).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from helpers import cli_env

HEAVY = ("langgraph", "langchain_core", "langgraph_sdk")  # langgraph_sdk imports langchain_core

COMMANDS = [
    "threads",
    "history",
    "show",
    "diff",
    "tasks",
    "validate",
    "fsck",
    "render",
    "delete",
    "copy",
    "prune",
    "migrate",
    "import",
    "export",
    "heads",
    "server",
    "server sync",
]


def loaded_after(code: str) -> list[str]:
    """The LangGraph and LangChain modules loaded once ``code`` ran in a fresh interpreter."""
    probe = textwrap.dedent(code) + textwrap.dedent(
        f"""
        import json, sys
        print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r})))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=cli_env(), timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def run_app(*args: str) -> str:
    return f"""
        import contextlib, io
        from langgraph_checkpoint_repo.cli import app
        with contextlib.redirect_stdout(io.StringIO()) as out:
            try:
                app({list(args)!r}, prog_name="langgraph-repo")
            except SystemExit as done:
                assert done.code == 0, done.code
        assert "Usage: langgraph-repo" in out.getvalue(), out.getvalue()
        """


def test_importing_the_cli_app_imports_no_langgraph() -> None:
    assert loaded_after("from langgraph_checkpoint_repo.cli import app") == []


def test_help_imports_no_langgraph() -> None:
    assert loaded_after(run_app("--help")) == []


@pytest.mark.parametrize("command", COMMANDS)
def test_each_commands_help_imports_no_langgraph(command: str) -> None:
    assert loaded_after(run_app(*command.split(), "--help")) == []


def test_the_package_imports_langgraph_only_when_repo_saver_is_used() -> None:
    assert loaded_after("import langgraph_checkpoint_repo") == []
    loaded = loaded_after(
        """
        from langgraph_checkpoint_repo import RepoSaver, copy_threads
        from langgraph.checkpoint.base import BaseCheckpointSaver
        assert issubclass(RepoSaver, BaseCheckpointSaver) and callable(copy_threads)
        """
    )
    assert "langgraph.checkpoint.base" in loaded


def test_an_unknown_public_name_is_still_an_attribute_error() -> None:
    import langgraph_checkpoint_repo

    with pytest.raises(AttributeError, match="no_such_name"):
        langgraph_checkpoint_repo.no_such_name  # noqa: B018


def built_commands(*args: str) -> tuple[list[str], str]:
    """The commands typer built for ``langgraph-repo ARGS`` run as its entry point runs it, and
    what it printed."""
    probe = textwrap.dedent(
        f"""
        import contextlib, io, json
        import typer.main
        built = []
        real = typer.main.get_command_from_info
        def counting(command_info, **kwargs):
            command = real(command_info=command_info, **kwargs)
            built.append(command.name)
            return command
        typer.main.get_command_from_info = counting
        from langgraph_checkpoint_repo.cli import app
        with contextlib.redirect_stdout(io.StringIO()) as out:
            try:
                app({list(args)!r}, prog_name="langgraph-repo")
            except SystemExit as done:
                assert done.code == 0, done.code
        print(json.dumps([built, out.getvalue()]))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=cli_env(), timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    built, printed = json.loads(proc.stdout.splitlines()[-1])
    return built, printed


def test_a_command_line_that_names_a_command_builds_only_it_and_prints_the_same_help() -> None:
    from typer.testing import CliRunner

    from langgraph_checkpoint_repo.cli import app

    for args in (
        ["validate", "--help"],
        ["store", "sweep", "--help"],
        ["--root", "validate", "threads", "-h"],
    ):
        built, printed = built_commands(*args)
        named = [a for a in args if a in {*built, "store"}]
        assert set(built) <= {"validate", "threads", "sweep", "ls", "get", "search", "put", "delete"}, built
        assert named and set(built) & set(named), (args, built)
        whole = CliRunner().invoke(app, args, prog_name="langgraph-repo")  # in this process
        assert whole.exit_code == 0 and printed.split() == whole.output.split(), (
            args,
            printed,
        )  # widths differ


def test_a_command_line_that_names_no_command_before_help_builds_none_and_lists_them_all() -> None:
    """The list comes from the registry's help lines (cli/registry.py): no command is built."""
    # help asked for before the command; a command name that is only --root's or --allow's value
    for args in (["-h", "validate"], ["--help"], ["--root", "show", "-h"], ["--allow", "validate", "--help"]):
        built, printed = built_commands(*args)
        assert built == []
        assert "threads" in printed and "migrate" in printed and "store" in printed


@pytest.mark.parametrize("args", [["valdate", "show"], ["--root", "show", "valdate"], ["shw"]])
def test_a_mistyped_command_gets_the_suggestions_the_whole_app_gives(args: list[str]) -> None:
    from typer.testing import CliRunner

    from langgraph_checkpoint_repo.cli import app

    proc = subprocess.run(
        [sys.executable, "-m", "langgraph_checkpoint_repo", *args],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=300,
    )
    whole = CliRunner().invoke(app, args, prog_name="langgraph-repo")  # in this process
    error = [line for line in whole.output.splitlines() if line.startswith("Error:")]
    assert proc.returncode == whole.exit_code == 2
    assert error and "Did you mean" in error[0]
    assert error[0] in proc.stderr.splitlines(), proc.stderr
