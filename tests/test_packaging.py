"""What a user's tools see of the installed package: the built wheel, not the checkout.

The package is not on PyPI; README.md ("Install into your own project") says to install it
from a path, a git URL or a built wheel. The wheel is built once here and installed into a
fresh venv outside the clone, where a new app uses it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

from test_git import git

PROJECT = Path(__file__).resolve().parent.parent
NAME = "langgraph_checkpoint_repo"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(PROJECT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (built,) = out.glob(f"{NAME}-*.whl")
    return built


def test_the_wheel_carries_the_py_typed_marker_and_the_schemas(wheel: Path) -> None:
    """PEP 561: without py.typed a user's mypy treats the package as untyped (Any everywhere)."""
    names = set(zipfile.ZipFile(wheel).namelist())
    assert f"{NAME}/py.typed" in names
    assert f"{NAME}/schemas/checkpoint.schema.json" in names
    assert f"{NAME}/core/index.py" in names
    assert f"{NAME}/readmodel/reader.py" in names


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
