"""The command line shows a graph's own types readably, with or without leave to construct
them (docs/types.md): ``--allow module:Name`` / ``module:*`` on the command line. The
project's list (langgraph.json's, else the ``[tool.langgraph-repo]`` table's ``allow`` and
``graph``) is read only with ``--trust-project``. Each command runs as a fresh process would
(helpers.cli: none of the project's modules imported before it, the project's folder on
sys.path only when ``--allow`` puts it there; LANGGRAPH_STRICT_MSGPACK=true in a process).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from types_project import MAIN_WRITER, WRITE, cli, make_project, run_script

ALLOW_NOTE = "that imports their module. Without it they are shown as stored"


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def steps(project: Path, thread: str) -> dict[int, str]:
    data = json.loads(ok(cli(project, "history", thread, "--json")))
    return {c["step"]: c["checkpoint_id"] for c in data["checkpoints"]}


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The four threads of ``types_project``, written once by ``write.py`` in its own process
    (never changed: the tests read it as ``project`` or change a copy, ``copy_of``)."""
    project = make_project(tmp_path_factory.mktemp("types-cli"))
    run_script(project, "write.py", WRITE)
    return project


@pytest.fixture
def project(written: Path) -> Path:
    """The written project, for tests that only read it."""
    return written


def copy_of(written: Path, tmp_path: Path) -> Path:
    """A copy of the written project (``tmp_path/proj``) for a test that changes its files."""
    return Path(shutil.copytree(written, tmp_path / "proj", symlinks=True))


def test_show_and_diff_without_allow_read_the_types_by_name_and_fields(project: Path) -> None:
    """Without leave to construct them, show and diff print an Enum as ``Color('blue')``, a
    timedelta as ``timedelta(days=14)`` and a model by its fields, alike, then name the types
    not revived and the exact option that allows them."""
    shown = ok(cli(project, "show", "pydantic"))
    assert "  Customer:\n" in shown and "    color: Color('red')\n" in shown
    assert "    due: timedelta(days=14)\n" in shown and "    name: ada\n" in shown
    assert "(not revived: refusing to construct myapp.state.Color, myapp.state.Customer" in shown
    assert "--allow myapp.state:Customer --allow myapp.state:Color (or myapp.state:*)" in shown
    ids = steps(project, "enum")
    diff = ok(cli(project, "diff", "enum", "--from", ids[0], "--to", ids[1]))
    assert "  - Color('red')\n  + Color('blue')\n" in diff
    assert "--allow myapp.state:Color (or myapp.state:*); " + ALLOW_NOTE in diff
    show_enum = ok(cli(project, "show", "enum", "--checkpoint", ids[1]))
    assert "Color('blue')" in show_enum
    ids = steps(project, "pydantic")
    diff = ok(cli(project, "diff", "pydantic", "--from", ids[0], "--to", ids[1]))
    assert "  + Customer:\n" in diff and "      color: Color('red')\n" in diff
    assert "      due: timedelta(days=14)\n" in diff
    assert "timedelta: 0: 14" not in diff and "0: red" not in diff


@pytest.mark.parametrize("allow", ["myapp.state:*", "myapp.state:Color"])
def test_show_and_diff_with_allow_construct_the_types(project: Path, allow: str) -> None:
    """``--allow`` (before or after the command) constructs the types: ``Color.BLUE``, and no
    note about types not revived."""
    ids = steps(project, "enum")
    diff = ok(cli(project, "diff", "enum", "--from", ids[0], "--to", ids[1], "--allow", allow))
    assert "  - Color.RED\n  + Color.BLUE\n" in diff and "Not revived" not in diff
    shown = ok(cli(project, "--allow", allow, "show", "enum"))
    assert "color: Color.BLUE\n" in shown and "not revived" not in shown.lower()
    rendered = ok(cli(project, "render", "enum", "--allow", allow))
    assert "Color.BLUE" in rendered and "Not revived" not in rendered


@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
def test_show_with_allow_reads_a_model_as_the_program_does(project: Path, strict: bool) -> None:
    """Nested types (a dict of models) read alike with LANGGRAPH_STRICT_MSGPACK on or off;
    allowing only Color constructs the enum inside a model that stays by name and fields."""
    shown = ok(cli(project, "show", "nested", "--allow", "myapp.state:*", strict=strict))
    assert "      color: Color.RED\n" in shown and "      due: timedelta(days=14)\n" in shown
    assert "not revived" not in shown.lower()
    partly = ok(cli(project, "show", "nested", "--allow", "myapp.state:Color", strict=strict))
    assert "--allow myapp.state:Customer" in partly and "color: Color.RED" in partly


def test_render_shows_the_same_forms_and_the_note(project: Path) -> None:
    rendered = ok(cli(project, "render", "pydantic"))
    assert "\n  color: Color('red')\n" in rendered and "\n  due: timedelta(days=14)\n" in rendered
    assert "Not revived (shown by type name and fields, as stored): myapp.state.Customer" in rendered


def test_allow_refuses_a_malformed_item(project: Path) -> None:
    proc = cli(project, "show", "enum", "--allow", "myapp.state")
    assert proc.returncode == 2 and "--allow 'myapp.state': expected module:Name or module:*" in proc.stderr


COMPILED = "from myapp.agent import pydantic_graph\n\ngraph = pydantic_graph(None)\n"


MARKER = "import pathlib\npathlib.Path({path!r}).write_text('imported')\n"


@pytest.mark.parametrize(
    "table", ['allow = ["myapp.state:*"]', 'graph = "myapp.compiled:graph"'], ids=["allow", "graph"]
)
def test_pyproject_table_is_used_only_by_export_trust_project(
    written: Path, tmp_path: Path, table: str
) -> None:
    """``[tool.langgraph-repo]`` in the project's pyproject.toml: ``allow`` lists types,
    ``graph`` takes them from a compiled graph as ``compile`` does (importing its module). A
    pull request can change both, so reading commands (show, diff, render, history, tasks)
    never use it and never import the module it names (it leaves a marker when imported);
    ``export --trust-project`` does, and constructs the types."""
    project = copy_of(written, tmp_path)
    with (project / "pyproject.toml").open("a", encoding="utf-8") as f:
        f.write(f"\n[tool.langgraph-repo]\n{table}\n")
    (project / "myapp" / "compiled.py").write_text(COMPILED, encoding="utf-8")
    marker = tmp_path / "imported"
    for module in ("state.py", "compiled.py"):
        path = project / "myapp" / module
        path.write_text(MARKER.format(path=str(marker)) + path.read_text(encoding="utf-8"), encoding="utf-8")
    shown = ok(cli(project, "show", "pydantic"))
    assert "    color: Color('red')\n" in shown and "    due: timedelta(days=14)\n" in shown
    ids = steps(project, "pydantic")
    diff = ok(cli(project, "diff", "pydantic", "--from", ids[0], "--to", ids[1]))
    assert "      color: Color('red')\n" in diff
    for command in (["render", "pydantic"], ["tasks", "pydantic"], ["threads"], ["validate"]):
        ok(cli(project, *command))
    assert not marker.exists()
    target = f"sqlite:///{tmp_path / 'out.db'}"
    refused = cli(project, "export", target, "--thread", "pydantic")
    assert refused.returncode != 0 and "refusing to construct myapp.state" in refused.stderr
    assert not marker.exists()
    exported = cli(project, "export", target, "--thread", "pydantic", "--trust-project", "--json")
    copied = json.loads(ok(exported))
    assert copied["threads"] == ["pydantic"] and marker.exists()


def test_show_revives_what_langgraph_json_lists_only_with_trust_project(
    written: Path, tmp_path: Path
) -> None:
    """issue 39: a type in ``checkpointer.serde.allowed_msgpack_modules`` of langgraph.json
    (and no ``[tool.langgraph-repo]`` table) revives in ``show --trust-project``, as under the
    server; without the option ``show`` neither reads the list nor imports the module."""
    project = copy_of(written, tmp_path)
    assert "[tool.langgraph-repo]" not in (project / "pyproject.toml").read_text(encoding="utf-8")
    listed = [["myapp.state", "Color"], ["myapp.state", "Customer"]]
    config = {"graphs": {}, "checkpointer": {"serde": {"allowed_msgpack_modules": listed}}}
    (project / "langgraph.json").write_text(json.dumps(config), encoding="utf-8")
    marker = tmp_path / "imported"
    state = project / "myapp" / "state.py"
    state.write_text(MARKER.format(path=str(marker)) + state.read_text(encoding="utf-8"), encoding="utf-8")
    plain = ok(cli(project, "show", "pydantic"))
    assert "not revived: refusing to construct myapp.state.Color" in plain and not marker.exists()
    for args in (["show", "pydantic", "--trust-project"], ["--trust-project", "show", "pydantic"]):
        trusted = ok(cli(project, *args))
        assert "    color: Color.RED\n" in trusted and "not revived" not in trusted, trusted
    assert marker.exists()


def test_pyproject_inside_the_state_folder_is_ignored(written: Path, tmp_path: Path) -> None:
    """A pyproject.toml inside the root is data (a pull request can plant it): never read."""
    project = copy_of(written, tmp_path)
    planted = project / ".langgraph" / "pyproject.toml"
    planted.write_text('[tool.langgraph-repo]\ngraph = "os:system"\nallow = ["os:*"]\n', encoding="utf-8")
    shown = ok(cli(project, "show", "enum"))
    assert "Color('blue')" in shown and "--allow myapp.state:Color" in shown
    assert str(planted) not in shown


def test_export_reads_with_the_allowed_types_or_says_how(project: Path, tmp_path: Path) -> None:
    """export runs no graph: without leave it is refused, naming the types and the option;
    with ``--allow`` (after the command, as before it) the thread is copied."""
    target = f"sqlite:///{tmp_path / 'out.db'}"
    refused = cli(project, "export", target, "--thread", "pydantic")
    assert refused.returncode != 0
    assert "refusing to construct myapp.state.Color, myapp.state.Customer" in refused.stderr
    assert "--allow myapp.state:Color --allow myapp.state:Customer" in refused.stderr
    allowed = cli(project, "export", target, "--thread", "pydantic", "--allow", "myapp.state:*", "--json")
    copied = json.loads(ok(allowed))
    assert copied["threads"] == ["pydantic"]


def test_show_and_diff_a_main_writers_state(tmp_path: Path) -> None:
    """State written by ``python agent.py`` names ``agent.Order``: the command line shows it by
    name and fields, and with ``--allow agent:*`` constructs it (importing agent, whose
    ``if __name__ == "__main__"`` block does not run)."""
    project = make_project(tmp_path)
    run_script(project, "agent.py", MAIN_WRITER)
    run_script(project, "agent.py", MAIN_WRITER)
    shown = ok(cli(project, "show", "main"))
    assert "  Order:\n    item: tea\n    tier: Tier('gold')\n" in shown
    assert "--allow agent:Order --allow agent:Tier (or agent:*)" in shown
    ids = steps(project, "main")
    last = max(ids)
    diff = ok(cli(project, "diff", "main", "--to", ids[last], "--allow", "agent:*"))
    assert "n: changed" in diff and "Not revived" not in diff
    allowed = ok(cli(project, "show", "main", "--allow", "agent:*"))
    assert "  Order:\n    item: tea\n    tier: Tier.GOLD\n" in allowed
    assert "not revived" not in allowed.lower() and "wrote" not in allowed


def test_migrate_state_names_the_option_that_allows_a_type_it_refuses(project: Path) -> None:
    """A command that writes through the saver (migrate-state, as edit, heads and export)
    says which ``--allow`` constructs a type it refused, not a Python call (hostile review)."""
    (project / "rules.toml").write_text('name = "x"\n[default]\nzz = 1\n', encoding="utf-8")
    try:
        refused = cli(project, "migrate-state", "--rules", "rules.toml", "--dry-run", "pydantic")
    finally:
        (project / "rules.toml").unlink()
    assert refused.returncode != 0
    assert "To allow them: --allow myapp.state:Color --allow myapp.state:Customer" in refused.stderr
    assert "RepoSaver(allowlist" not in refused.stderr
