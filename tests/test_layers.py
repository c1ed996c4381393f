"""The package's layers, as docs/design.md draws them, checked on the source.

Imports point one way: ``core`` (the files: no LangGraph, no LangChain) <- ``readmodel``
(LangGraph's rules read off the files, still no LangGraph) <- the adapters (the saver, the
serializer policy, transfer, the Agent Server factory: they import LangGraph) <- the tools
(``cli``), which import an adapter only inside the function that revives or writes. Every
import counts, those inside functions and under ``TYPE_CHECKING`` included, so no cycle can
hide behind a deferred import. The data the core keeps in place of LangGraph's (its safe
types, its extension codes, its special write indexes, its task ids) is checked against
LangGraph's own here, so the two cannot drift apart unseen.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "langgraph_checkpoint_repo"
NAME = "langgraph_checkpoint_repo"
LANGGRAPH = ("langgraph", "langchain_core", "langchain", "langgraph_sdk")
# third-party packages each layer may import (beside the standard library)
CORE_THIRD_PARTY = {"orjson", "ormsgpack", "jsonschema_rs", "filelock", "xxhash"}


@functools.cache
def parsed(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once per run: every scan below walks the same files."""
    return ast.parse(path.read_text(encoding="utf-8"))


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> list[tuple[str, bool]]:
    """(imported module, at module level?) for every import statement of a file."""
    tree = parsed(path)
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    top_level = {id(node) for node in tree.body}
    out: list[tuple[str, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((alias.name, id(node) in top_level) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if node.module is None or target in MODULES_BY_NAME_PACKAGES:
                # ``from . import x``: each name may be a module of that package
                for alias in node.names:
                    candidate = f"{target}.{alias.name}"
                    out.append((candidate if candidate in MODULES else target, id(node) in top_level))
            else:
                out.append((target, id(node) in top_level))
    return out


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}
MODULES_BY_NAME_PACKAGES = {m for m, p in MODULES.items() if p.name == "__init__.py"}


def layer(module: str) -> str:
    rest = module.removeprefix(NAME + ".")
    if module == NAME or rest == "__main__":
        return "entry"
    if rest.startswith("core"):
        return "core"
    if rest.startswith("readmodel"):
        return "readmodel"
    if rest.startswith(("cli", "review")):
        return "tools"
    if rest == "_compat":
        return "compat"
    return "adapters"


def own(target: str) -> str | None:
    """The package module an import names (a name imported from a module: that module)."""
    while target:
        if target in MODULES:
            return target
        target = target.rpartition(".")[0]
    return None


def edges() -> list[tuple[str, str, bool]]:
    out = []
    for module, path in MODULES.items():
        for target, top in imports(path):
            out.append((module, target, top))
    return out


def test_no_import_cycle_among_the_modules_deferred_imports_included() -> None:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, target, _ in edges():
        dep = own(target)
        if dep is not None and dep != module and not MODULES[dep].name == "__init__.py":
            graph[module].add(dep)
    # Tarjan's strongly connected components: any component of two or more is a cycle
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert cycles == []


def test_core_and_readmodel_import_no_langgraph_and_nothing_above_them() -> None:
    allowed = {"core": {"core"}, "readmodel": {"core", "readmodel"}}
    offenders = []
    for module, target, _ in edges():
        here = layer(module)
        if here not in allowed:
            continue
        root = target.split(".")[0]
        if root in LANGGRAPH:
            offenders.append(f"{module} imports {target}")
        elif root == NAME:
            dep = own(target)
            if dep is not None and layer(dep) not in allowed[here] | {"entry"}:
                offenders.append(f"{module} imports {target} ({layer(dep)})")
        elif root not in sys.stdlib_module_names and root not in CORE_THIRD_PARTY:
            offenders.append(f"{module} imports third-party {target}")
    assert offenders == []


def test_adapters_never_import_the_tools_and_tools_import_adapters_only_in_functions() -> None:
    offenders = []
    for module, target, top in edges():
        dep = own(target)
        if dep is None:
            continue
        here, there = layer(module), layer(dep)
        if here in ("adapters", "compat") and there == "tools":
            offenders.append(f"{module} imports {dep}")
        if here == "tools" and there == "adapters" and top:
            offenders.append(f"{module} imports {dep} at module level")
        if here == "compat" and there != "compat":
            offenders.append(f"{module} imports {dep}")
    assert offenders == []


def test_importing_the_package_and_its_core_loads_no_langgraph() -> None:
    """In a fresh interpreter: the package, every core and read-model module, the command line."""
    names = [m for m in MODULES if layer(m) in ("core", "readmodel")] + [NAME, f"{NAME}.cli"]
    code = (
        "import sys\n"
        f"for name in {names!r}:\n"
        "    __import__(name)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {LANGGRAPH!r}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


# ----------------------------------------------------------------------------
# the core's copies of LangGraph's data
# ----------------------------------------------------------------------------
def test_the_core_safe_types_are_langgraphs() -> None:
    from langgraph_checkpoint_repo import _compat
    from langgraph_checkpoint_repo.core.typenames import SAFE_METHODS, SAFE_TYPES

    assert set(SAFE_TYPES) == set(_compat.SAFE_MSGPACK_TYPES)
    assert set(SAFE_METHODS) == set(_compat.SAFE_MSGPACK_METHODS)


def test_the_core_extension_codes_are_langgraphs() -> None:
    from langgraph.checkpoint.serde import jsonplus

    from langgraph_checkpoint_repo.core.format import tree

    assert (tree.EXT_SINGLE, tree.EXT_POS, tree.EXT_KW) == (
        jsonplus.EXT_CONSTRUCTOR_SINGLE_ARG,
        jsonplus.EXT_CONSTRUCTOR_POS_ARGS,
        jsonplus.EXT_CONSTRUCTOR_KW_ARGS,
    )
    assert (tree.EXT_METHOD, tree.EXT_PYD1, tree.EXT_PYD2) == (
        jsonplus.EXT_METHOD_SINGLE_ARG,
        jsonplus.EXT_PYDANTIC_V1,
        jsonplus.EXT_PYDANTIC_V2,
    )
    assert (tree.EXT_NUMPY, tree.EXT_DELTA) == (jsonplus.EXT_NUMPY_ARRAY, jsonplus.EXT_DELTA_SNAPSHOT)


@pytest.mark.parametrize(
    ("task_path", "task_id", "idx"), [("~__pregel_pull, a", "t1", 0), ("", "", 0), ("~x", "z", -3)]
)
def test_the_core_write_rules_are_langgraphs(task_path: str, task_id: str, idx: int) -> None:
    from langgraph.checkpoint.base import WRITES_IDX_MAP, writes_sort_key

    from langgraph_checkpoint_repo.core import writes

    assert writes.SPECIAL_WRITE_IDX == WRITES_IDX_MAP
    assert writes.writes_sort_key(task_path, task_id, idx) == writes_sort_key(task_path, task_id, idx)


# ----------------------------------------------------------------------------
# what the core leaves behind in a process
# ----------------------------------------------------------------------------
def test_every_error_survives_pickling_with_its_attributes() -> None:
    import pickle

    from langgraph_checkpoint_repo.cli.exits import CliError
    from langgraph_checkpoint_repo.core import errors

    made = [
        errors.FileFormatError("/r/a.json", "/x", "bad"),
        errors.SchemaVersionError("/r/a.json", "/schema_version", "too new"),
        errors.MissingReferenceError("/r/a.json", "/values/m", "gone"),
        errors.InvalidWriteError("checkpoint", "thread 't'", "/v", "nope"),
        errors.UnrevivableValueError("refused"),
        errors.LockTimeoutError("slow"),
        errors.NotFoundError("no thread"),
        errors.BadInputError("bad id"),
        errors.ThreadExistsError("there"),
        errors.ThreadNotFoundError("absent"),
        errors.SaverSpecError("no saver"),
        CliError("not confirmed", 5),
    ]
    for exc in made:
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is type(exc) and str(back) == str(exc)
        assert vars(back) == vars(exc)


def test_a_lock_timeout_is_a_timeout_error() -> None:
    from langgraph_checkpoint_repo.core.errors import LockTimeoutError, RepoCheckpointError

    assert issubclass(LockTimeoutError, TimeoutError) and issubclass(LockTimeoutError, RepoCheckpointError)


def test_thread_locks_are_dropped_when_no_one_holds_them(tmp_path: Path) -> None:
    from langgraph_checkpoint_repo import RepoSaver
    from langgraph_checkpoint_repo.core.durable import IDLE_LOCKS

    saver = RepoSaver(tmp_path / "root", durable=False)
    for n in range(IDLE_LOCKS * 3):
        with saver.store.thread_lock(f"t{n}"):
            with saver.store.thread_lock(f"t{n}", exclusive=False):
                assert len(saver.store.files.locks) == 1
    assert len(saver.store.files.locks) == 0
    assert saver.store.files.locks.kept == IDLE_LOCKS  # the last few, for the next call; no more


def gc_switches(tree: ast.AST) -> list[str]:
    return [
        f"gc.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "gc"
        and node.attr in ("disable", "enable", "freeze", "unfreeze", "set_threshold", "set_debug")
    ]


def test_reading_the_derived_index_leaves_the_garbage_collector_alone(tmp_path: Path) -> None:
    """index.py once paused the process-wide collector while decoding; nothing of the package
    may switch it in the caller's process (a caller's own gc settings are theirs). The one
    exception is a process the package forked itself: the whole-root check's worker freezes
    what it inherited (snapshot._quiet, the pool's initializer, nowhere else)."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        tree = parsed(path)
        worker = (
            [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name == "_quiet"]
            if path.name == "snapshot.py"
            else []
        )
        allowed = {id(n) for f in worker for n in ast.walk(f)}
        offenders += [
            f"{path.relative_to(PACKAGE)}: {switch}"
            for node in ast.walk(tree)
            if id(node) not in allowed
            for switch in gc_switches(node if isinstance(node, ast.Attribute) else ast.Pass())
        ]
    assert offenders == []
    snapshot = (PACKAGE / "core" / "snapshot.py").read_text(encoding="utf-8")
    assert "initializer=_quiet" in snapshot
    assert snapshot.count("_quiet") == 2  # defined, and handed to the pool: no one else calls it


def test_a_check_in_worker_processes_leaves_the_callers_collector_as_it_was(tmp_path: Path) -> None:
    """The workers freeze their own copy of the heap; the caller's collector (enabled or not,
    its thresholds, what it had frozen) is the same after a check that forked them."""
    import gc

    from graphs import chat_root
    from langgraph_checkpoint_repo.core.checks import Validator

    root = tmp_path / "root"
    for thread in ("a", "b", "c"):
        chat_root(root, thread, 2)
    before = (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count())
    done: list[int] = []
    assert Validator(root, done.append, workers=2).run() == []
    assert len(done) == 3  # a thread at a time: checked in the workers (one process: a file at a time)
    assert (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()) == before


async def test_alist_yields_the_first_checkpoint_before_reading_the_rest(tmp_path: Path) -> None:
    """``alist`` hands over each checkpoint as it is read: a caller that stops after the first
    never makes the saver read the others."""
    from graphs import cfg, chain_graph
    from langgraph_checkpoint_repo import RepoSaver
    from langgraph_checkpoint_repo.core.format.records import CheckpointRecord

    root = tmp_path / "root"
    saver = RepoSaver(root, durable=False)
    chain_graph(saver).invoke({"log": []}, cfg("t"))
    ids = saver.store.checkpoint_ids("t", "")
    assert len(ids) > 3
    fresh = RepoSaver(root)
    read: list[str] = []
    real = fresh.store.get

    def counting(thread_id: str, ns: str, cid: str) -> CheckpointRecord:
        read.append(cid)
        return real(thread_id, ns, cid)

    fresh.store.get = counting  # type: ignore[method-assign]
    async for tup in fresh.alist(cfg("t")):
        first = tup.config["configurable"]["checkpoint_id"]
        break
    assert first == ids[-1]
    assert ids[0] not in read


# ----------------------------------------------------------------------------
# the commands that start without LangGraph (issue: the command line's start-up)
# ----------------------------------------------------------------------------
LOADED = (
    "import sys\n"
    "from langgraph_checkpoint_repo.cli import app\n"
    "try:\n"
    "    app(args=sys.argv[1:], prog_name='langgraph-repo')\n"
    "except SystemExit as exc:\n"
    "    code = exc.code\n"
    "names = sorted({m.split('.')[0] for m in sys.modules} & {'langgraph', 'langchain_core', 'langchain'})\n"
    "print('LOADED', code, ' '.join(names) or '-', file=sys.stderr)\n"
)


@pytest.fixture(scope="module")
def fixture_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every situation the fixture graphs leave: chat, interrupt, subgraph, fork, failed fan-out."""
    from graphs import build_fixture_tree

    root = tmp_path_factory.mktemp("layers") / "root"
    build_fixture_tree(root)
    return root


def loaded(root: Path, *args: str) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-c", LOADED, "--root", str(root), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("LOADED ")]
    assert line, proc.stderr
    _, code, names = line[-1].split(" ", 2)
    return int(code or 0) if code != "None" else 0, names


@pytest.mark.parametrize(
    "args",
    [
        ["threads"],
        ["threads", "--json"],
        ["heads", "fork"],
        ["history", "chat"],
        ["history", "sub", "--json"],
        ["tasks", "ask"],
        ["tasks", "sub", "--json"],
        ["tasks", "fan"],
        ["validate"],
        ["validate", "--heads"],
        ["fsck"],
        ["prune", "--keep-last", "2", "--dry-run"],
        ["migrate", "--dry-run"],
        ["--help"],
    ],
    ids=lambda a: " ".join(a),
)
def test_the_commands_that_construct_nothing_never_import_langgraph(
    fixture_root: Path, args: list[str]
) -> None:
    """threads, heads, history, tasks, validate, fsck, prune and migrate read files only: in a
    fresh interpreter they finish without LangGraph or LangChain ever being imported."""
    code, names = loaded(fixture_root, *args)
    assert code in (0, 1), (args, code)  # 1: validate --heads / fsck found something
    assert names == "-", (args, names)


@pytest.mark.parametrize("args", [["threads"], ["validate"], ["history", "chat"]])
def test_the_reading_commands_start_without_pydantic(fixture_root: Path, args: list[str]) -> None:
    """typer 0.29 converts every parameter through pydantic, which cost a reading command
    about 0.17 s of start-up (docs/cli.md, "Speed of the CLI"); the package holds typer below
    it, and these commands import no pydantic."""
    code = LOADED.replace("'langchain'}", "'langchain', 'pydantic'}")
    proc = subprocess.run(
        [sys.executable, "-c", code, "--root", str(fixture_root), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("LOADED ")]
    assert line and line[-1].split(" ", 2)[2] == "-", proc.stderr[-2000:]


def test_validate_of_named_files_imports_no_langgraph(fixture_root: Path) -> None:
    files = sorted((fixture_root / "threads" / "chat" / "checkpoints").glob("*.json"))[-2:]
    code, names = loaded(fixture_root, "validate", *map(str, files))
    assert (code, names) == (0, "-")


def test_show_imports_langgraph_to_revive_values(fixture_root: Path) -> None:
    """The guard above can fail: a command that constructs values does load LangGraph."""
    code, names = loaded(fixture_root, "show", "chat")
    assert code == 0 and "langgraph" in names.split()


# ----------------------------------------------------------------------------
# the format's markers: the seam issue 36 builds, measured before it is enforced
# ----------------------------------------------------------------------------
#: the words of the on-disk format (docs/format.md) only the format package is to know
MARKERS = frozenset(
    {
        "$ref",
        "$in",
        "$ns",
        "$chunks",
        "$id",
        "$role",
        "$pair",
        "$fields",
        "base_ref",
        "new_values",
        "parent_writes",
        "updated_channels",
    }
)
FORMAT_PACKAGE = f"{NAME}.core.format"


def _docstrings(tree: ast.AST) -> set[int]:
    """The docstrings of a module, its classes and functions: prose, not code that knows."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


Modules = dict[str, Path]  # module name -> its file


def _from_target(node: ast.ImportFrom, module: str, path: Path) -> str:
    """The module a ``from ... import`` in ``module`` names, relative imports resolved."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def marker_constants(modules: Modules, trees: dict[str, ast.Module]) -> dict[str, set[str]]:
    """Module-level names bound to a marker (``REF = "$ref"``), or imported as one and so
    importable from there too, per module: what an importer of the marker constants imports."""
    out: dict[str, set[str]] = {}
    for module, tree in trees.items():
        for node in tree.body:
            value = node.value if isinstance(node, ast.Assign) else None
            if isinstance(node, ast.Assign) and isinstance(value, ast.Constant) and value.value in MARKERS:
                names = {t.id for t in node.targets if isinstance(t, ast.Name)}
                out.setdefault(module, set()).update(names)
    grown = True
    while grown:  # re-exports: ``from .objects import REF`` at module level makes REF importable here
        grown = False
        for module, tree in trees.items():
            for node in tree.body:
                if isinstance(node, ast.ImportFrom):
                    known = out.get(_from_target(node, module, modules[module]), set())
                    names = {a.asname or a.name for a in node.names if a.name in known}
                    if names - out.get(module, set()):
                        out.setdefault(module, set()).update(names)
                        grown = True
    return out


def _imported_markers(module: str, modules: Modules, tree: ast.Module, constants: dict[str, set[str]]) -> int:
    """How many marker constants a module takes from another: ``from .objects import REF``
    counts each name, ``objects.REF`` each use."""
    count = 0
    bound: dict[str, str] = {}  # local name -> the package module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _from_target(node, module, modules[module])
            for alias in node.names:
                if f"{target}.{alias.name}" in modules:
                    bound[alias.asname or alias.name] = f"{target}.{alias.name}"
                elif alias.name in constants.get(target, ()) and target != module:
                    count += 1
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in modules:
                    bound[alias.asname] = alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.attr in constants.get(bound.get(node.value.id, ""), ()):
                count += 1
    return count


def marker_uses(modules: Modules | None = None) -> dict[str, dict[str, int]]:
    """Per module outside the format package that knows a marker: how many string constants
    are one (``named``: the issue's rule), how many other strings hold one (``in text``: a
    JSON pointer such as ``/parent_writes/...``, a message; docstrings left out), how many
    marker constants it takes from another module (``imported``)."""
    modules = MODULES if modules is None else modules
    trees = {m: parsed(p) for m, p in modules.items()}
    constants = marker_constants(modules, trees)
    out: dict[str, dict[str, int]] = {}
    for module, tree in sorted(trees.items()):
        if module == FORMAT_PACKAGE or module.startswith(FORMAT_PACKAGE + "."):
            continue
        prose = _docstrings(tree)
        strings = [
            n.value
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in prose
        ]
        named = sum(text in MARKERS for text in strings)
        in_text = sum(text not in MARKERS and any(m in text for m in MARKERS) for text in strings)
        imported = _imported_markers(module, modules, tree, constants)
        if named or in_text or imported:
            out[module.removeprefix(NAME + ".")] = {"named": named, "in text": in_text, "imported": imported}
    return out


def private_imports(modules: Modules | None = None) -> dict[str, list[str]]:
    """Per module: the private names (``_x``, not a module) it imports from another module of
    the package, inside functions too (issue 36: none)."""
    modules = MODULES if modules is None else modules
    out: dict[str, list[str]] = {}
    for module, path in sorted(modules.items()):
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.ImportFrom):
                target = _from_target(node, module, path)
                for alias in node.names:
                    private = alias.name.startswith("_") and not alias.name.startswith("__")
                    if private and target.startswith(NAME) and f"{target}.{alias.name}" not in modules:
                        short = target.removeprefix(NAME + ".")
                        out.setdefault(module.removeprefix(NAME + "."), []).append(f"{short}.{alias.name}")
    return out


LONGEST_FUNCTION = 60  # lines, docstring included (issue 36: none longer)


def long_functions(modules: Modules | None = None) -> dict[str, list[str]]:
    """Per module: its functions longer than ``LONGEST_FUNCTION`` lines, with their length."""
    modules = MODULES if modules is None else modules
    out: dict[str, list[str]] = {}
    for module, path in sorted(modules.items()):
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > LONGEST_FUNCTION:
                    out.setdefault(module.removeprefix(NAME + "."), []).append(f"{node.name} ({lines})")
    return out


def seam_report() -> str:
    """The counts per module, for ``python tests/test_layers.py``."""
    uses = marker_uses()
    naming = [m for m, n in uses.items() if n["named"] or n["imported"]]
    columns = ("named", "in text", "imported")
    rows = [f"{'module':<28}" + "".join(f"{c:>10}" for c in columns)]
    rows += [f"{m:<28}" + "".join(f"{n[c]:>10}" for c in columns) for m, n in uses.items()]
    rows.append(f"{'total':<28}" + "".join(f"{sum(n[c] for n in uses.values()):>10}" for c in columns))
    rows.append(f"{len(naming)} modules outside core/format name a marker or import a marker constant today")
    private = private_imports()
    rows += ["", "private names imported from another module:"]
    rows += [f"{m:<28} {len(names):>3}  {', '.join(names)}" for m, names in private.items()]
    rows.append(f"{sum(map(len, private.values()))} imports in {len(private)} modules")
    long = long_functions()
    rows += ["", f"functions over {LONGEST_FUNCTION} lines:"]
    rows += [f"{m:<28} {', '.join(names)}" for m, names in long.items()]
    rows.append(f"{sum(map(len, long.values()))} functions in {len(long)} modules")
    return "\n".join(rows)


def test_only_the_format_package_names_the_formats_markers() -> None:
    """Issue 36's goal, enforced since it holds: the markers appear as string constants, and
    their constants are imported, only under ``core/format/`` (24 modules named them, 116
    constants, when the scan was written). ``python tests/test_layers.py`` prints the counts."""
    uses = marker_uses()
    naming = {m: n for m, n in sorted(uses.items()) if n["named"] or n["imported"]}
    assert not naming, "\n".join(f"{m}: {n}" for m, n in naming.items())


def test_no_private_name_is_imported_from_another_module() -> None:
    """Issue 36's goal, enforced since it holds: a name another module needs is public (the
    command line's helpers were imported across its modules 69 times as ``_x``)."""
    private = private_imports()
    assert not private, "\n".join(f"{m}: {', '.join(names)}" for m, names in sorted(private.items()))


def test_no_function_is_longer_than_sixty_lines() -> None:
    """Issue 36's goal, enforced since it holds (20 functions were longer when the scan was
    written): a function that long does more than one thing."""
    long = long_functions()
    assert not long, "\n".join(f"{m}: {', '.join(names)}" for m, names in sorted(long.items()))


#: the format's modules that walk a root or are handed its files; the rest is its codec
FORMAT_OVER_A_ROOT = {"resolve", "storing", "needs", "migrations"}
#: what the codec may import from the rest of the core: the leaves, which know bytes and places
CORE_LEAVES = {"errors", "masking", "cjson", "jsonread", "jsontext", "layout", "caches"}


def test_the_formats_codec_imports_only_the_leaves_of_the_core() -> None:
    """The format's codec (records, encode, decode, the view ...) sits below the files layer
    and the thread store: it imports nothing of them, so the driver and every reader can use
    it without a root (docs/design.md, "Layers")."""
    wrong = []
    for module, path in sorted(MODULES.items()):
        if not module.startswith(FORMAT_PACKAGE + ".") or module.rpartition(".")[2] in FORMAT_OVER_A_ROOT:
            continue
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.ImportFrom):
                target = _from_target(node, module, path)
                inside = target.startswith(FORMAT_PACKAGE) or not target.startswith(NAME)
                if not inside and target.removeprefix(f"{NAME}.core.") not in CORE_LEAVES:
                    wrong.append(f"{module} imports {target}")
    assert not wrong, "\n".join(wrong)


def test_the_thread_stores_public_signatures_hold_no_plain_dicts() -> None:
    """Issue 36's goal: ``ThreadStore`` hands out and takes records; documents are the business
    of ``store.docs`` and ``store.files``."""
    tree = parsed(MODULES[f"{NAME}.core.threads"])
    (store,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ThreadStore"]
    found = []
    for fn in store.body:
        if isinstance(fn, ast.FunctionDef) and not fn.name.startswith("_"):
            args = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
            notes = [a.annotation for a in args if a.annotation is not None] + [fn.returns]
            text = " ".join(ast.unparse(n) for n in notes if n is not None)
            if "dict[" in text or "Document" in text:
                found.append(f"{fn.name}: {text}")
    assert found == [], found


def test_the_seam_scans_count_what_they_look_for(tmp_path: Path) -> None:
    """The scans can fail: a module naming ``"$ref"``, one importing ``REF`` from it (by name,
    through a re-export, as ``objects.REF``) and one holding ``"/parent_writes/x"`` are each
    counted; a docstring is not, nor anything under ``core/format/``; a private name imported
    is (a private module, ``_compat``, is not); a 61-line function is."""
    files = {
        "core/__init__.py": "",
        "core/objects.py": '"""About $ref."""\nREF = "$ref"\n',
        "core/again.py": "from .objects import REF\n",
        "core/user.py": "from .again import REF\nfrom . import objects\nx = (REF, objects.REF)\n",
        "core/pointer.py": 'def f(c: str) -> str:\n    """new_values."""\n    return f"/parent_writes/{c}"\n',
        "core/format/__init__.py": 'IN = "$in"\n',
        "core/private.py": "from .objects import _hidden\nfrom . import _compat\n",
        "core/_compat.py": "",
        "core/long.py": "def f() -> None:\n" + "    pass\n" * 60,
    }
    modules = {}
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        modules[f"{NAME}." + rel.removesuffix(".py").removesuffix("/__init__").replace("/", ".")] = path
    assert marker_uses(modules) == {
        "core.objects": {"named": 1, "in text": 0, "imported": 0},
        "core.again": {"named": 0, "in text": 0, "imported": 1},
        "core.user": {"named": 0, "in text": 0, "imported": 2},
        "core.pointer": {"named": 0, "in text": 1, "imported": 0},
    }
    assert private_imports(modules) == {"core.private": ["core.objects._hidden"]}
    assert long_functions(modules) == {"core.long": ["f (61)"]}


if __name__ == "__main__":
    print(seam_report())
