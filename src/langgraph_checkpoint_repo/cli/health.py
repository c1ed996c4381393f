"""Check commands: validate and fsck (exit 1 when they find problems).

Both read the files only (core/checks.py): no value is constructed and LangGraph is not
imported, unless ``validate --revive`` asks to construct LangGraph's own types as a read would.
What only one of them or one option needs (``--heads``, ``--since``, named files) is imported
where it is used, so the other starts without it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..core.checks import Problem, Validator, count_files, fsck, repair
from ..core.errors import (
    BadInputError,
    NotFoundError,
)
from .app import (
    JsonOpt,
    Settings,
    open_reader,
    progress_bar,
    require_root,
    settings_of,
)
from .exits import PROBLEMS
from .output import (
    Text,
    print_json,
    problems_json,
    relative_to_root,
)

if TYPE_CHECKING:
    from ..core.filechecks import Targets


def validate(
    ctx: typer.Context,
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Files under the root: each is checked with what it refers to, no other file (pre-commit "
            "passes the staged ones). Folders: the threads they hold, whole. Default: everything."
        ),
    ] = None,
    as_json: JsonOpt = False,
    secrets: Annotated[
        bool,
        typer.Option(
            "--secrets/--no-secrets",
            help="Report strings that look like API keys or tokens (masked); on by default.",
        ),
    ] = True,
    heads: Annotated[
        bool,
        typer.Option(
            "--heads",
            help="Also fail when a namespace has more than one head nobody chose (CI after a merge; "
            "docs/forks.md).",
        ),
    ] = False,
    base: Annotated[
        str | None,
        typer.Option(
            "--base",
            metavar="REV",
            help="Also fail when a state file that existed at git revision REV was changed since (files "
            "are never changed once written: history rewritten). CI passes the pull request's base.",
        ),
    ] = None,
    revive: Annotated[
        bool,
        typer.Option(
            "--revive",
            help="Also construct the types LangGraph ships (messages, Send, datetimes ...) strictly, as "
            "a graph's read would, and report data they reject (imports LangGraph; slower).",
        ),
    ] = False,
) -> None:
    """Check every file against its schema, every reference, names against contents, and
    that no string looks like an API key or token.
    Exit 0 when clean, 1 with one line per problem (file and JSON pointer)."""
    _validate(settings_of(ctx), list(paths or []), ValidateOptions(as_json, secrets, heads, base, revive))


@dataclass(frozen=True)
class ValidateOptions:
    """What ``validate`` was asked beyond its paths: output, which checks, the git base."""

    as_json: bool
    secrets: bool
    heads: bool
    base: str | None
    revive: bool


def _validate(settings: Settings, paths: list[Path], opts: ValidateOptions) -> None:
    """``validate`` once its options are read: the checks run, the problems printed, exit 1
    when there are any."""
    root = settings.root
    require_root(root)
    found = _targets(root, paths)
    folders = None if found.whole or not paths else found.folders
    validator = _run_checks(settings, found, folders, opts)
    problems = sorted(set(validator.problems))
    if opts.heads:
        from ..core.heads import unsettled_problems

        where = None if folders is None else sorted({*folders, *(_thread_of(root, f) for f in found.files)})
        problems = sorted(set(problems) | set(unsettled_problems(validator.store, where)))
    if opts.base is not None:
        from ..review.immutable import rewritten_since

        problems = sorted(set(problems) | set(rewritten_since(root, opts.base)))
    _report_validation(settings, validator, problems, opts.as_json)
    if problems:
        raise typer.Exit(PROBLEMS)


def _run_checks(
    settings: Settings, found: Targets, folders: list[Path] | None, opts: ValidateOptions
) -> Validator:
    """The file checks, under a progress bar: the folders' threads whole (``None``: the root),
    and the named files with what they refer to."""
    root = settings.root
    with progress_bar(settings, "validating", _count(root, folders, found.files + found.store)) as advance:
        revival = None
        if opts.revive:
            from ..serde import check_revival

            revival = check_revival
        validator = Validator(root, advance, secrets=opts.secrets, revival=revival)
        if folders is None or folders:
            validator.run(folders)
        if folders is not None and found.files:
            from ..core.filechecks import check_files

            check_files(validator, found.files)
        if folders is not None and found.store:
            from ..core.filechecks import check_store

            check_store(validator, found.store)
    return validator


def _targets(root: Path, paths: list[Path]) -> Targets:
    """What ``validate PATH...`` checks; a path outside the root or not there is an error naming it."""
    from ..core.filechecks import targets

    found = targets(root, paths)
    if found.outside:
        raise BadInputError(f"{found.outside[0]} is not under the root {root}")
    if found.missing:
        more = f" (and {len(found.missing) - 1} more)" if len(found.missing) > 1 else ""
        raise NotFoundError(f"{found.missing[0]}: no such file or folder{more}")
    return found


def _count(root: Path, folders: list[Path] | None, files: list[Path]) -> int:
    """How many files the run reads itself (the progress bar's total)."""
    whole = count_files(root, folders) if folders is None or folders else 0
    return whole + (len(files) if folders is not None else 0)


def _thread_of(root: Path, path: Path) -> Path:
    threads = (root / "threads").resolve()
    return threads / path.relative_to(threads).parts[0]


def _report_validation(
    settings: Settings, validator: Validator, problems: list[Problem], as_json: bool
) -> None:
    """One line per problem (file and JSON pointer) and a summary, or the same as JSON."""
    if as_json:
        print_json(
            {
                "ok": not problems,
                "root": str(settings.root),
                "files": validator.files,
                "checkpoints": validator.checkpoints,
                "items": validator.items,
                "problems": problems_json(problems),
            }
        )
        return
    for p in problems:
        settings.out.print(Text(f"{relative_to_root(p.path)}: {p.pointer}: {p.message}"))

    def count(n: int, what: str) -> str:
        return f"{n} {what}{'' if n == 1 else 's'}"

    items = f"{count(validator.items, 'store item')}, " if validator.items else ""
    summary = f"{count(validator.files, 'file')}, {items}{count(validator.checkpoints, 'checkpoint')}"
    if problems:
        settings.err.print(
            Text(f"{len(problems)} problem{'s' if len(problems) != 1 else ''} ({summary})", style="red")
        )
    else:
        settings.err.print(Text(f"ok: {summary} valid", style="green"))


def fsck_command(
    ctx: typer.Context,
    do_repair: Annotated[
        bool,
        typer.Option(
            "--repair", help="Remove leftover and orphaned files, rebuild derived ones; never a checkpoint."
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Find leftover temp files, orphaned writes, values and large values, and stale derived files."""
    from .shape import finding_json

    settings = settings_of(ctx)
    reader = open_reader(ctx)
    total = count_files(reader.root)
    with progress_bar(settings, "checking", total) as advance:
        findings = fsck(reader.store, advance)
    if do_repair:
        repair(reader.store, findings)
    left = [f for f in findings if not f.repaired and f.kind != "foreign"]  # foreign: reported only
    if as_json:
        print_json(
            {"root": str(reader.root), "findings": [finding_json(f) for f in findings], "ok": not left}
        )
    else:
        out = settings.out
        for f in findings:
            if f.repaired:
                verb = "rebuilt" if f.kind == "gitignore" else "removed"
                out.print(
                    Text.assemble((verb, "green"), f" {f.kind}: {relative_to_root(f.path)} ({f.message})")
                )
            elif f.repairable or f.kind != "invalid":
                out.print(Text.assemble((f.kind, "yellow"), f": {relative_to_root(f.path)}: {f.message}"))
            else:
                out.print(
                    Text.assemble(
                        ("invalid", "red"),
                        f": {relative_to_root(f.path)}: {f.message} (fsck never touches it; see validate)",
                    )
                )
        if not findings:
            settings.err.print(
                Text(f"clean: {total} files under {relative_to_root(reader.root)}", style="green")
            )
        elif left and not do_repair and any(f.repairable for f in left):
            settings.err.print(
                Text("run with --repair to remove or rebuild what is marked repairable", style="dim")
            )
    if left:
        raise typer.Exit(PROBLEMS)
