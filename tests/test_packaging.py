"""What a user's tools see of the installed package: the built wheel, not the checkout.

The package is not on PyPI; README.md ("Install into your own project") says to install it
from a path, a git URL or a built wheel. The wheel is built once here and installed into a
fresh venv outside the clone, where a new app uses it.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import subprocess
import sys
import sysconfig
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest
from packaging.metadata import Metadata
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from test_git import git

PROJECT = Path(__file__).resolve().parent.parent
NAME = "langgraph_checkpoint_repo"


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist, and the wheel built from it, as a release builds them (``python -m build``;
    with the test extra's hatchling, not one installed into a new environment per build)."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "-q", "--no-isolation", "--outdir", str(out), str(PROJECT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return out


@pytest.fixture(scope="module")
def wheel(dist: Path) -> Path:
    (built,) = dist.glob(f"{NAME}-*.whl")
    return built


def test_the_wheel_carries_the_py_typed_marker_and_the_schemas(wheel: Path) -> None:
    """PEP 561: without py.typed a user's mypy treats the package as untyped (Any everywhere)."""
    names = set(zipfile.ZipFile(wheel).namelist())
    assert f"{NAME}/py.typed" in names
    assert f"{NAME}/schemas/checkpoint.schema.json" in names
    assert f"{NAME}/core/index.py" in names
    assert f"{NAME}/readmodel/reader.py" in names


def test_the_sdist_and_the_wheel_carry_the_license_and_metadata_an_index_accepts(dist: Path) -> None:
    """What ``twine check`` checks, with packaging's own validator: the metadata of both parses
    and validates, declares the MIT license with its text, keywords, classifiers and the
    README as Markdown; the sdist carries the license, the changelog and the README."""
    (wheel,) = dist.glob(f"{NAME}-*.whl")
    (sdist,) = dist.glob("langgraph_checkpoint_repo-*.tar.gz")
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
        (meta_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        wheel_meta = Metadata.from_email(whl.read(meta_name), validate=True)
        assert [n for n in names if n.endswith(".dist-info/licenses/LICENSE")], names
    with tarfile.open(sdist) as tar:
        top = tar.getnames()[0].split("/")[0]
        members = set(tar.getnames())
        assert {f"{top}/{f}" for f in ("LICENSE", "CHANGELOG.md", "README.md", "PKG-INFO")} <= members
        pkg_info = tar.extractfile(f"{top}/PKG-INFO")
        assert pkg_info is not None
        sdist_meta = Metadata.from_email(pkg_info.read(), validate=True)
    for meta in (wheel_meta, sdist_meta):
        assert str(meta.license_expression) == "MIT" and meta.license_files == ["LICENSE"]
        assert meta.keywords and "langgraph" in meta.keywords
        assert meta.classifiers and "Typing :: Typed" in meta.classifiers
        assert meta.description_content_type == "text/markdown" and meta.description


def test_every_third_party_module_the_package_imports_is_declared() -> None:
    """A module ``src`` imports (at the top or inside a function) comes from a distribution the
    project declares: a dependency, or an extra that the command importing it needs."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - the package's own dependency there
        import tomli as tomllib
    with open(PROJECT / "pyproject.toml", "rb") as fh:
        project = tomllib.load(fh)["project"]
    declared = {_dist_name(r) for r in project["dependencies"]}
    for extra in project["optional-dependencies"].values():
        declared |= {_dist_name(r) for r in extra}
    providers = importlib.metadata.packages_distributions()
    undeclared = {}
    for module in sorted(_imported(PROJECT / "src" / NAME)):
        # not installed here (tomli on 3.11): its distribution is named as the module is
        dists = {canonicalize_name(d) for d in providers.get(module, [module])}
        if not dists & declared:
            undeclared[module] = sorted(dists)
    assert not undeclared, undeclared


def test_a_module_only_an_extra_provides_is_never_imported_at_a_module_s_top() -> None:
    """Installed without extras, every module of the package imports: what only an extra
    provides (httpx for ``server sync``, the SQLite and PostgreSQL savers for ``import``/``export``)
    is imported inside the function that needs it, never at a module's top (a top-level
    ``if TYPE_CHECKING:`` block aside). The check above accepts a module any extra declares."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - the package's own dependency there
        import tomli as tomllib
    with open(PROJECT / "pyproject.toml", "rb") as fh:
        base = {_dist_name(r) for r in tomllib.load(fh)["project"]["dependencies"]}
    providers = importlib.metadata.packages_distributions()
    at_top = {}
    for path in sorted((PROJECT / "src" / NAME).rglob("*.py")):
        for module in _top_level_imports(ast.parse(path.read_text(encoding="utf-8"))):
            dists = {canonicalize_name(d) for d in providers.get(module, [module])}
            if module not in sys.stdlib_module_names and module != NAME and not dists & base:
                at_top[str(path.relative_to(PROJECT))] = module
    assert not at_top, at_top
    planted = ast.parse(
        "import httpx\nif TYPE_CHECKING:\n    import psycopg\ndef f():\n    import sqlite_vec\n"
    )
    assert _top_level_imports(planted) == ["httpx"]  # the walk sees the top, not the guarded or lazy


def _top_level_imports(tree: ast.Module) -> list[str]:
    """The top-level names a module imports when it is imported: its top statements and those
    under a top-level ``try``/``if`` (other than ``if TYPE_CHECKING:``), not a function's."""
    out: list[str] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, ast.Import):
            out += [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append(node.module.split(".")[0])
        elif isinstance(node, ast.If | ast.Try):
            pending += [*node.body, *node.orelse]
            pending += [s for h in getattr(node, "handlers", []) for s in h.body]
            pending += list(getattr(node, "finalbody", []))
    return out


def _dist_name(requirement: str) -> str:
    return str(canonicalize_name(Requirement(requirement).name))


def _imported(src: Path) -> set[str]:
    """The top-level names of every module imported under ``src`` that is neither the
    standard library's nor this package's."""
    out = set()
    for path in src.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                out |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                out.add(node.module.split(".")[0])
    return out - set(sys.stdlib_module_names) - {NAME}


APP = '''
    """A new app: a graph compiled with RepoSaver(), run once."""
    import langgraph_checkpoint_repo
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    from langgraph_checkpoint_repo import RepoSaver


    class State(TypedDict):
        greeting: str


    def greet(state: State) -> State:
        return {"greeting": state["greeting"] + ", world"}


    builder = StateGraph(State)
    builder.add_node("greet", greet)
    builder.add_edge(START, "greet")
    builder.add_edge("greet", END)
    graph = builder.compile(checkpointer=RepoSaver())
    out = graph.invoke({"greeting": "hello"}, {"configurable": {"thread_id": "first-run"}})
    print(langgraph_checkpoint_repo.__file__)
    print(out["greeting"])
'''


def fresh_venv(where: Path) -> Path:
    """A new venv that sees the dependencies this one has installed, but not this package.

    No network in a test: the dependencies come from this venv's site-packages, each entry
    linked into a folder a ``.pth`` file names, all but this package's own (the editable
    install that points at the clone). pip sees them as installed, so it resolves the wheel's
    requirements against them and fetches nothing.
    """
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    deps = where / "deps"
    deps.mkdir()
    ours = (NAME, f"_editable_impl_{NAME}", f"__editable__.{NAME}")
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.startswith(ours) and entry.suffix != ".pth":
            (deps / entry.name).symlink_to(entry)
    site = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(site) / "deps.pth").write_text(f"{deps}\n")
    return venv


def outside_env() -> dict[str, str]:
    """This environment without what would point a process at the clone or at a package index."""
    steer = ("PYTHONPATH", "VIRTUAL_ENV", "LANGGRAPH_REPO_ROOT", "PYTHONHOME")
    env = {k: v for k, v in os.environ.items() if k not in steer and not k.startswith("PIP_")}
    return env | {"PIP_CONFIG_FILE": os.devnull, "PYTHONNOUSERSITE": "1"}


@pytest.mark.skipif(sys.platform == "win32", reason="the venv's bin/ layout and symlinks are POSIX")
def test_the_wheel_installs_into_a_fresh_venv_and_a_new_app_outside_the_clone_uses_it(
    wheel: Path, tmp_path: Path
) -> None:
    venv = fresh_venv(tmp_path)
    python, env = venv / "bin" / "python", outside_env()
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-index",
         "--find-links", str(wheel.parent), "langgraph-checkpoint-repo"],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "Successfully installed langgraph-checkpoint-repo-" in installed.stdout

    app = tmp_path / "my-app"
    app.mkdir()
    git(app, "init", "-q", "-b", "main")
    (app / "app.py").write_text(textwrap.dedent(APP))
    ran = subprocess.run([python, "app.py"], cwd=app, capture_output=True, text=True, env=env, timeout=300)
    assert ran.returncode == 0, ran.stderr
    module, greeting = ran.stdout.splitlines()
    assert greeting == "hello, world"
    assert Path(module).is_relative_to(venv) and not Path(module).is_relative_to(PROJECT), module
    assert list((app / ".langgraph" / "threads" / "first-run" / "checkpoints").glob("*.json"))

    listed = subprocess.run(
        [str(venv / "bin" / "langgraph-repo"), "threads", "--json"],
        cwd=app, capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert [t["thread_id"] for t in json.loads(listed.stdout)] == ["first-run"]

    # git's diff driver, as git-setup registers it: the venv's interpreter running the entry
    # file in site-packages with -I -S (no .pth file runs: the entry finds the package itself)
    set_up = subprocess.run(
        [str(venv / "bin" / "langgraph-repo"), "git-setup"], cwd=app, capture_output=True, text=True, env=env
    )
    assert set_up.returncode == 0, set_up.stderr
    entry = Path(module).parent / "review" / "textconv_entry.py"
    assert f"textconv {python} -I -S {entry} --view " in set_up.stdout
    git(app, "config", "user.name", "t")  # git log -p commits its cache of the driver's text
    git(app, "config", "user.email", "t@example.invalid")
    git(app, "add", "-A")
    git(app, "commit", "-q", "-m", "first run")
    shown = git(app, "log", "-p").stdout
    assert '+  greeting: "hello, world"' in shown and "channel_versions" not in shown, shown
