"""Fixtures most test modules build the same way.

pytest puts this folder on sys.path (rootdir-relative "prepend" import mode), so test
modules import the shared builders as ``graphs`` and ``helpers``.
"""

from __future__ import annotations

import importlib
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import id as lg_id

from langgraph_checkpoint_repo import RepoSaver, ride


@pytest.fixture(scope="session", autouse=True)
def user_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``XDG_CACHE_HOME`` of the tests (and of the processes they start): the embeddings key
    (core/vectors.py) is made there, not in the home folder of whoever runs the tests."""
    folder = tmp_path_factory.mktemp("user-cache")
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(folder)
    yield folder
    if old is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = old


_TABLES: list[threading.Thread] = []


def _unicode_tables() -> None:
    """What the first ``st.text()`` of a process asks for (imported here: off the controller's
    start)."""
    from hypothesis import strategies as st

    st.text().validate()


@pytest.hookimpl(trylast=True)  # after hypothesis's own: its plugin's initialization is over
def pytest_sessionstart(session: pytest.Session) -> None:
    """The xdist controller makes hypothesis's unicode tables once, in a thread, while its
    workers start and collect. ``st.text()`` draws from ``characters(codec="utf-8")``, whose
    table hypothesis makes by encoding every code point (2.7 s of CPU here) and keeps under
    ``.hypothesis/unicode_data/`` for the next process: each worker of a fresh clone made it
    again for itself. A worker that wants it before the file is there makes it as before."""
    config = session.config
    if getattr(config, "workerinput", None) is None and config.getoption("numprocesses", 0):
        tables = threading.Thread(target=_unicode_tables, name="hypothesis tables", daemon=True)
        tables.start()
        _TABLES.append(tables)


def pytest_collection(session: pytest.Session) -> None:
    """Worker *i* of *n* imports the test modules from the *i*-th *n*-th of them on before it
    collects. Every xdist worker collects (imports) every module, and in a fresh clone the first
    import of each compiles it (pytest's assertion rewriting of a test module, and the ``.pyc``
    of each module of ``src`` and of the installed packages it imports: 7.8 s of CPU for the
    test modules alone here). Python and pytest write what they compiled for the next process
    to read, so workers that start at different places split the compiling between them
    instead of each doing all of it; the modules, and what each test runs, are the same. A
    module that fails to import is left to the collection, which reports it."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if not worker.startswith("gw") or count < 2:
        return
    modules = sorted(Path(__file__).parent.glob("test_*.py"))
    for path in modules[len(modules) * int(worker[2:]) // count :]:
        try:
            importlib.import_module(path.stem)
        except (Exception, pytest.skip.Exception):  # the collection imports it again and reports it
            continue


def pytest_unconfigure(config: pytest.Config) -> None:
    """A run shorter than the tables ends with them written, not half made."""
    for tables in _TABLES:
        tables.join()


@pytest.fixture
def writes_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every put_writes written in a file of its own, as when no put follows it soon (an
    interrupt, a task beside a slower one): a step's writes otherwise ride in the next
    checkpoint (ride.py) and no writes file is made."""
    monkeypatch.setattr(ride, "LINGER", 0.0)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root the test's saver creates (nothing exists there yet)."""
    return tmp_path / "root"


#: the bound on arrays and objects, lowered for the tests of a rule that applies it
SMALL_CONTAINER_BOUND = 20_000


@pytest.fixture
def container_bound(monkeypatch: pytest.MonkeyPatch) -> int:
    """The bound on the arrays and objects one file or one expanded value may hold, lowered
    from 1,000,000 to ``SMALL_CONTAINER_BOUND`` in this process (the writer and every reader
    look it up when they run): a test of a rule that applies it (refused on write, read back
    after) proves the rule at a fiftieth of the size. Tests of memory (a child process in a
    small address space) keep the real bound. The command line runs in this process for such
    a test whatever LANGGRAPH_REPO_TEST_CLI says: a child would have the real bound."""
    import helpers
    from langgraph_checkpoint_repo.core import jsonread
    from langgraph_checkpoint_repo.core.format import objects

    monkeypatch.setattr(helpers, "CLI_MODE", "in-process")
    monkeypatch.setattr(objects, "MAX_CONTAINERS", SMALL_CONTAINER_BOUND)
    monkeypatch.setattr(jsonread, "MAX_JSON_CONTAINERS", SMALL_CONTAINER_BOUND)
    return SMALL_CONTAINER_BOUND


@pytest.fixture
def saver(root: Path) -> RepoSaver:
    """A saver on ``root`` that skips fsync: the tests do not pull the plug."""
    return RepoSaver(root, durable=False)


#: the modules that take longest (a few slow tests, or a slow module fixture), longest first.
#: xdist hands whole modules (--dist loadfile) to its workers in collection order
#: (--no-loadscope-reorder), so these start first and no long module runs alone at the end
#: while the other worker idles; the rest follow, most tests first. Ordered by each module's
#: time in two runs of the whole suite on 2 workers (``pytest --durations=0``, summed per
#: module): values at the bounds (test_hardening_review3, test_review_objects,
#: test_hardening_chains: a million arrays, 1,024-link chains), the differential seeds, fresh
#: processes (test_types_reads, test_crash, test_concurrency).
LONGEST_FIRST = (
    "test_hardening_review3.py",
    "test_review_objects.py",
    "test_differential.py",
    "test_hardening_chains.py",
    "test_types_reads.py",
    "test_crash.py",
    "test_concurrency.py",
    "test_hardening_codeexec.py",
    "test_faults.py",
    "test_agent_server.py",
    "test_store_differential.py",
    "test_migrations.py",
    "test_examples.py",
    "test_hardening_dataloss.py",
    "test_layers.py",
    "test_checkout_code.py",
    "test_index.py",
    "test_safety.py",
    "test_objects.py",
    "test_maintenance.py",
    "test_properties.py",
    "test_review.py",
    "test_transfer.py",
    "test_cli.py",
    "test_bench.py",
    "test_layout.py",
    "test_types_cli.py",
    "test_secrets.py",
    "test_format4.py",
    "test_packaging.py",  # builds a wheel, installs it into a fresh venv and runs an app there
    "test_store.py",
    "test_graphs.py",
    "test_edit.py",
    "test_review_ci.py",
    "test_hostile.py",
    "test_cli_speed.py",
    "test_gitsetup.py",
    "test_hardening_handedits.py",
    "test_forks_visible.py",
    "test_hardening_terminal.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest modules first, each module's tests kept together and in their order."""
    counts = Counter(str(item.path) for item in items)
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}

    def key(item: pytest.Item) -> tuple[int, int, str]:
        return rank.get(item.path.name, len(rank)), -counts[str(item.path)], str(item.path)

    items.sort(key=key)  # stable: the order inside a module is kept


class _Clock:
    """``time`` as LangGraph's uuid6 sees it, shifted by ``offset`` seconds."""

    def __init__(self, offset: float) -> None:
        self.offset = offset

    def time_ns(self) -> int:
        return time.time_ns() + int(self.offset * 1e9)


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Switch the machine LangGraph's ids come from: ``machine(600)`` runs ten minutes ahead."""

    def use(offset: float) -> None:
        monkeypatch.setattr(lg_id, "time", _Clock(offset))
        monkeypatch.setattr(lg_id, "_last_v6_timestamp", None)  # a new machine: no id seen yet

    yield use
