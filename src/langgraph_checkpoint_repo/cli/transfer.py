"""import and export: copy threads between the repo files and another checkpointer.

Both construct every value they copy (through the savers), so they import LangGraph. They
construct LangGraph's safe types and what ``--allow`` names; the global ``--trust-project``
adds the types the project lists (langgraph.json, else its ``[tool.langgraph-repo]`` table),
importing its modules (an explicit choice that runs the project's code; docs/types.md)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer

from ..core.errors import RepoCheckpointError
from .app import (
    JsonOpt,
    Settings,
    progress_columns,
    require_root,
    settings_of,
)
from .exits import FAILED, INTERRUPTED, CliError
from .output import (
    print_json,
    relative_to_root,
    report_broken,
)

ThreadsOpt = Annotated[
    list[str] | None, typer.Option("--thread", "-t", help="Copy only this thread (repeatable). Default: all.")
]
ReplaceOpt = Annotated[
    bool, typer.Option("--replace", help="Replace a thread the destination already has (default: refuse).")
]
SkipOpt = Annotated[
    bool,
    typer.Option(
        "--skip-copied",
        help="Finish an interrupted run: skip threads the destination holds whole (compared checkpoint "
        "by checkpoint) and write again whole the one it holds in part.",
    ),
]
SaverArg = Annotated[str, typer.Argument(help="sqlite:///PATH.db, postgresql://..., or module:factory.")]


def _transfer(
    ctx: typer.Context,
    other: str,
    to_repo: bool,
    threads: list[str] | None,
    replace: bool,
    json_out: bool,
    skip_copied: bool = False,
) -> None:
    from ..saver import RepoSaver
    from ..transfer import CopyReport, copy_threads, open_saver, thread_ids_of

    settings = settings_of(ctx)
    require_root(settings.root, creating=to_repo)
    allowed = settings.allowed()
    repo = RepoSaver(settings.root, allowlist=sorted(allowed.types) or None)
    repo.codec.fix = allowed.fix
    report, wanted = CopyReport(), list(threads or [])
    here = relative_to_root(settings.root)
    where = f"from {other} into {here}" if to_repo else f"from {here} into {other}"
    try:
        with open_saver(other, create=not to_repo, allowlist=allowed.types) as saver:
            source, target = (saver, repo) if to_repo else (repo, saver)
            wanted = wanted or thread_ids_of(source)
            with _copy_progress(settings, len(wanted)) as step:
                copy_threads(
                    source,
                    target,
                    threads,
                    replace=replace,
                    progress=step,
                    keep_going=len(wanted) > 1,
                    skip_copied=skip_copied,
                    report=report,
                )
    except KeyboardInterrupt:
        raise CliError(_interrupted(report, len(wanted), where), INTERRUPTED) from None
    except (RepoCheckpointError, OSError):
        raise  # its exit code comes from exits.EXIT_CODES (SaverSpecError 2, ThreadExistsError 5, ...)
    except Exception as exc:  # a driver's own error (psycopg, sqlite3): one line, never a traceback
        raise CliError(f"{other}: {type(exc).__name__}: {' '.join(str(exc).split())}", FAILED) from None
    if json_out:
        print_json(report.to_json())
    else:
        settings.out.print(
            f"copied {_threads(len(report.threads))} ({report.checkpoints} checkpoints, "
            f"{report.writes} pending writes) {where}"
            + (f"; {_threads(len(report.skipped))} already there whole, skipped" if report.skipped else "")
            + (f"; removed the staging threads left: {', '.join(report.cleared)}" if report.cleared else "")
            + (f"; {len(report.failed)} not copied (below)" if report.failed else "")
        )
    report_broken(settings, list(report.failed.items()))


def _threads(n: int) -> str:
    return f"{n} thread{'s' if n != 1 else ''}"


def _interrupted(report: Any, wanted: int, where: str) -> str:
    """What an interrupted copy did, and how to finish it."""
    done = f"interrupted: copied {len(report.threads)} of {_threads(wanted)} {where}"
    if report.skipped:
        done += f" ({len(report.skipped)} skipped, already there whole)"
    if report.current is not None:
        done += f"; thread {report.current!r} was being copied and is not whole there"
    if report.staging is not None:
        done += f" (its new copy is whole in the staging thread {report.staging!r})"
    return done + "; run the same command with --skip-copied to finish"


@contextmanager
def _copy_progress(settings: Settings, threads: int) -> Iterator[Any]:
    """On a terminal: a bar over the checkpoints of the thread being copied, and threads done."""
    if not settings.err.is_terminal:
        yield None
        return
    from rich.progress import Progress

    with Progress(*progress_columns(), console=settings.err, transient=True) as progress:
        task = progress.add_task("copying", total=None)
        finished = 0

        def step(thread_id: str, done: int, total: int) -> None:
            nonlocal finished
            finished += done == total
            label = f"thread {finished + (done < total)}/{threads} {thread_id!r}"
            progress.update(task, description=label, completed=done, total=total)

        yield step


def import_command(
    ctx: typer.Context,
    source: SaverArg,
    thread: ThreadsOpt = None,
    replace: ReplaceOpt = False,
    skip_copied: SkipOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Copy threads from another checkpointer into the repo files (docs/migrating.md)."""
    _transfer(ctx, source, True, thread, replace, json_out, skip_copied=skip_copied)


def export(
    ctx: typer.Context,
    target: SaverArg,
    thread: ThreadsOpt = None,
    replace: ReplaceOpt = False,
    skip_copied: SkipOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Copy threads from the repo files into another checkpointer (docs/migrating.md)."""
    _transfer(ctx, target, False, thread, replace, json_out, skip_copied)
