"""``module:*`` in an allowlist (docs/types.md): every class *defined in* that module, never a
function nor a name the module imported; and the ``[tool.langgraph-repo]`` table's checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph_checkpoint_repo.core.errors import BadInputError, UnrevivableValueError
from langgraph_checkpoint_repo.core.format.tree import tree_to_msgpack
from langgraph_checkpoint_repo.project_types import cli_types, find_pyproject, project_types
from langgraph_checkpoint_repo.serde import ValueCodec


def load(allow: list[tuple[str, str]], tree: object) -> object:
    codec = ValueCodec(JsonPlusSerializer(allowed_msgpack_modules=None), allowlist=allow)
    return codec.loads(("msgpack", tree_to_msgpack(tree)), "the value")


def test_module_star_constructs_the_classes_defined_in_the_module() -> None:
    decoder = load([("json.decoder", "*")], {"$type": ["json.decoder", "JSONDecoder"], "$kwargs": {}})
    assert isinstance(decoder, json.JSONDecoder)


@pytest.mark.parametrize(
    "tree",
    [
        {"$type": ["os", "system"], "$arg": "true"},  # a function
        {"$type": ["json", "JSONDecoder"], "$kwargs": {}},  # a class json imported from json.decoder
    ],
    ids=["function", "imported class"],
)
def test_module_star_refuses_functions_and_imported_names(tree: dict[str, object]) -> None:
    module = tree["$type"][0]  # type: ignore[index]
    with pytest.raises(UnrevivableValueError, match=rf"{module}:\* allows only the classes defined in"):
        load([(str(module), "*")], tree)


def test_module_star_does_not_allow_another_module() -> None:
    with pytest.raises(UnrevivableValueError, match=r"refusing to construct os\.system"):
        load([("json.decoder", "*")], {"$type": ["os", "system"], "$arg": "true"})


def project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "x"\n{table}', encoding="utf-8")
    root = tmp_path / ".langgraph"
    root.mkdir()
    return root


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[tool.langgraph-repo]\nallowed = ["a:B"]\n', "unknown key 'allowed'"),
        ('[tool.langgraph-repo]\nallow = "a:B"\n', "allow: must be a list of strings"),
        ('[tool.langgraph-repo]\nallow = ["a.B"]\n', "expected module:Name or module:*"),
        ('[tool.langgraph-repo]\ngraph = "json:dumps"\n', "is a function, not a compiled graph"),
        ("[tool.langgraph-repo\n", "cannot read it as TOML"),
    ],
    ids=["unknown key", "not a list", "no colon", "not a graph", "broken toml"],
)
def test_a_bad_table_is_an_error_naming_the_file(tmp_path: Path, table: str, message: str) -> None:
    root = project(tmp_path, table)
    with pytest.raises(BadInputError, match=message) as info:
        project_types(root)
    assert str(tmp_path / "pyproject.toml") in str(info.value)


def test_the_table_is_read_from_above_the_root_never_inside(tmp_path: Path) -> None:
    root = project(tmp_path, '[tool.langgraph-repo]\nallow = ["myapp.state:*"]\n')
    (root / "pyproject.toml").write_text('[tool.langgraph-repo]\nallow = ["evil:*"]\n', encoding="utf-8")
    assert find_pyproject(root) == tmp_path / "pyproject.toml"
    assert project_types(root, ["a.b:C"]).types == {("myapp.state", "*"), ("a.b", "C")}


@pytest.mark.parametrize("item", ["os:system", "subprocess:*", "builtins:eval", "os.path:join"])
def test_a_standard_library_name_is_never_allowed_from_the_table_or_the_option(
    tmp_path: Path, item: str
) -> None:
    """docs/types.md: Python's own callables get no option to allow, whatever the table says."""
    root = project(tmp_path, f'[tool.langgraph-repo]\nallow = ["{item}"]\n')
    with pytest.raises(BadInputError, match="standard library") as info:
        project_types(root)
    assert str(tmp_path / "pyproject.toml") in str(info.value)
    with pytest.raises(BadInputError, match="standard library"):
        cli_types([item])


def served(tmp_path: Path, serde: object, table: str = "") -> Path:
    """A project whose langgraph.json has ``checkpointer.serde`` (and a pyproject table)."""
    root = project(tmp_path, table)
    config = {"graphs": {"agent": "./agent.py:graph"}, "checkpointer": {"serde": serde}}
    (tmp_path / "langgraph.json").write_text(json.dumps(config), encoding="utf-8")
    return root


def test_langgraph_json_s_serde_list_comes_before_the_table_s_allow(tmp_path: Path) -> None:
    """issue 39, item 3: ``checkpointer.serde.allowed_msgpack_modules`` of the langgraph.json
    beside the root is the project's list; the table's ``allow`` is read only without one."""
    listed = {"allowed_msgpack_modules": [["myapp.state", "Order"], ["pkg", "mod", "Thing"]]}
    root = served(tmp_path, listed, '[tool.langgraph-repo]\nallow = ["a.b:C"]\n')
    found = project_types(root, ["x.y:Z"])
    assert found.types == {("myapp.state", "Order"), ("pkg.mod", "Thing"), ("x.y", "Z")}
    assert found.langgraph_json == tmp_path / "langgraph.json"
    (tmp_path / "langgraph.json").write_text('{"checkpointer": {"path": "x:y"}}', encoding="utf-8")
    assert project_types(root).types == {("a.b", "C")}  # no list there: the table's


def test_a_null_serde_list_allows_only_langgraph_s_safe_types(tmp_path: Path) -> None:
    root = served(tmp_path, {"allowed_msgpack_modules": None}, '[tool.langgraph-repo]\nallow = ["a.b:C"]\n')
    assert project_types(root).types == set()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (True, "true \\(every type\\) is not allowed"),
        ([["os", "system"]], "standard library"),
        ([["lonely"]], "expected a list of \\[module, Name\\] lists"),
        ("myapp.state:Order", "expected a list of \\[module, Name\\] lists"),
    ],
    ids=["every type", "os.system", "no name", "not a list"],
)
def test_a_serde_list_that_allows_too_much_or_reads_as_nothing_is_an_error_naming_the_file(
    tmp_path: Path, value: object, message: str
) -> None:
    root = served(tmp_path, {"allowed_msgpack_modules": value})
    with pytest.raises(BadInputError, match=message) as info:
        project_types(root)
    assert str(tmp_path / "langgraph.json") in str(info.value)


def test_the_agent_server_s_saver_is_allowed_what_langgraph_json_lists(tmp_path: Path) -> None:
    from langgraph_checkpoint_repo.agent_server import server_saver

    served(tmp_path, {"allowed_msgpack_modules": [["myapp.state", "Order"]]})
    assert ("myapp.state", "Order") in server_saver(tmp_path)._allowlist
