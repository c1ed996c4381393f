"""The official LangGraph checkpointer conformance suite, run on RepoSaver."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import (
    BASE_CAPABILITIES,
    EXTENDED_CAPABILITIES,
)

from langgraph_checkpoint_repo import RepoSaver


async def test_conformance_reports_every_capability_passed(tmp_path: Path) -> None:
    counter = iter(range(10_000))

    @checkpointer_test(name="RepoSaver")
    async def repo_saver() -> AsyncGenerator[RepoSaver, None]:
        yield RepoSaver(tmp_path / f"root-{next(counter)}")

    report = await validate(repo_saver)
    failures = {name: result.failures for name, result in report.results.items() if not result.passed}
    assert failures == {}
    expected = {c.value for c in BASE_CAPABILITIES | EXTENDED_CAPABILITIES}
    passed = {name for name, result in report.results.items() if result.passed}
    assert passed == expected
    assert len(passed) == 8
