"""The pull-request workflow (examples/github/langgraph-review.yml), its commands run for real.

GitHub itself cannot run here, so the test plays the runner: a repository is cloned, a branch
gets agent turns, the base branch moves on, and the CI checkout is the merge GitHub makes for a
pull request (full history, as ``fetch-depth: 0``). Then the ``run:`` scripts of the workflow's
steps are read from the file and run as the runner runs them (``bash -eo pipefail``, the
workflow's environment, the ``${{ }}`` expressions filled from the pull request's event), so the
range is computed exactly as the workflow computes it. Only the forge's comment API is a
stand-in: a ``gh`` that keeps the pull request's comments in a file and filters them with the
real ``jq``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from bench.agent_graphs import build_create_agent, user_message
from langchain_core.messages import HumanMessage

from graphs import cfg
from langgraph_checkpoint_repo import RepoSaver
from test_git import commit_all, git, init_repo
from test_review import said

WORKFLOW = Path(__file__).resolve().parents[1] / "examples" / "github" / "langgraph-review.yml"
MARKER = "<!-- langgraph-repo-review -->"
THREAD = "support-1"
BOT = "github-actions[bot]"

FAKE_GH = '''#!{python}
"""A stand-in for the forge's comment API: ``gh api`` over a JSON file of comments."""
import json, os, subprocess, sys

state_path = os.environ["FAKE_FORGE"]
state = json.load(open(state_path))
args = sys.argv[1:]
assert args[0] == "api", args
method, jq, body, path = "GET", None, None, None
rest = args[1:]
while rest:
    a = rest.pop(0)
    if a == "--method":
        method = rest.pop(0)
    elif a == "--jq":
        jq = rest.pop(0)
    elif a == "--input":
        body = json.load(open(rest.pop(0)))["body"]
    elif a == "--paginate":
        pass
    else:
        path = a
state["calls"].append([method, path])
if method == "GET":
    out = json.dumps(state["comments"])
    if jq:
        out = subprocess.run(["jq", "-r", jq], input=out, capture_output=True, text=True, check=True).stdout
    sys.stdout.write(out)
elif method == "POST":
    new = {{"id": len(state["comments"]) + 100, "user": {{"login": "{bot}"}}, "body": body}}
    state["comments"].append(new)
elif method == "PATCH":
    cid = int(path.rsplit("/", 1)[1])
    (comment,) = [c for c in state["comments"] if c["id"] == cid]
    comment["body"] = body
json.dump(state, open(state_path, "w"))
'''


def turn(repo: Path, n: int, *, text: str | None = None, thread: str = THREAD) -> None:
    message = user_message(n) if text is None else HumanMessage(content=text, id=f"user-{n}-{len(text)}")
    build_create_agent(RepoSaver(repo / ".langgraph", durable=False)).invoke(
        {"messages": [message]}, cfg(thread)
    )


def rev(repo: Path, name: str = "HEAD") -> str:
    return git(repo, "rev-parse", name).stdout.strip()


class Runner:
    """The runner of one pull request: its checkout, temp folder, summary and the forge's comments."""

    def __init__(self, tmp: Path, origin: Path, base_ref: str, head_ref: str) -> None:
        self.tmp = tmp
        self.origin = origin
        self.base_ref, self.head_ref = base_ref, head_ref
        tmp.mkdir()
        self.forge = tmp / "forge.json"
        self.forge.write_text(json.dumps({"comments": [], "calls": []}))
        self.bin = tmp / "bin"
        self.bin.mkdir()
        gh = self.bin / "gh"
        gh.write_text(FAKE_GH.format(python=sys.executable, bot=BOT))
        gh.chmod(0o755)
        self.runs = 0
        self.workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
        self.outputs: dict[str, str] = {}  # ``steps.<id>.outputs.<name>`` of this run's steps

    def checkout(self) -> Path:
        """What actions/checkout gives a pull request: the merge of head into base, all history."""
        self.runs += 1
        self.outputs = {}
        work = self.tmp / f"run{self.runs}" / "workspace"
        work.parent.mkdir()
        subprocess.run(["git", "clone", "-q", str(self.origin), str(work)], check=True, env=_git_env())
        git(work, "config", "user.name", "GitHub")
        git(work, "config", "user.email", "noreply@github.com")
        self.base_sha = rev(work, f"origin/{self.base_ref}")
        self.head_sha = rev(work, f"origin/{self.head_ref}")
        git(work, "checkout", "-q", "--detach", self.base_sha)
        git(work, "merge", "-q", "--no-ff", "--no-edit", self.head_sha)
        return work

    def step(
        self, work: Path, step_id: str, env_over: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """The step's ``run:`` script, as the runner runs it; ``env_over`` over the step's own."""
        step = workflow_step(self.workflow, step_id)
        context = {
            "github.event.pull_request.number": "7",
            "github.server_url": "https://github.com",
            "github.repository": "acme/agent",
            "github.run_id": str(1000 + self.runs),
            "github.token": "not-a-token",
            **self.outputs,
        }
        env = {**os.environ, **_git_env()}
        env["PATH"] = os.pathsep.join([str(self.bin), str(Path(sys.executable).parent), env["PATH"]])
        env.update({k: str(v) for k, v in self.workflow["env"].items()})
        env.update({k: _expand(str(v), context) for k, v in step.get("env", {}).items()})
        temp = work.parent / "runner-temp"
        temp.mkdir(exist_ok=True)
        outputs = work.parent / f"{step_id}.outputs"
        outputs.write_text("", encoding="utf-8")
        env.update(
            RUNNER_TEMP=str(temp),
            GITHUB_OUTPUT=str(outputs),
            GITHUB_STEP_SUMMARY=str(work.parent / "summary.md"),
            GITHUB_REPOSITORY="acme/agent",
            GITHUB_WORKSPACE=str(work),
            FAKE_FORGE=str(self.forge),
        )
        env.update(env_over or {})
        assert self.workflow["defaults"]["run"]["shell"] == "bash"
        script = work.parent / f"{step_id}.sh"
        script.write_text(step["run"], encoding="utf-8")
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        for line in outputs.read_text(encoding="utf-8").splitlines():  # ``name=value`` lines
            name, _, value = line.partition("=")
            self.outputs[f"steps.{step_id}.outputs.{name}"] = value
        return proc

    def comments(self) -> list[dict[str, Any]]:
        return list(json.loads(self.forge.read_text())["comments"])

    def calls(self) -> list[list[str]]:
        return list(json.loads(self.forge.read_text())["calls"])


def workflow_step(workflow: dict[str, Any], step_id: str) -> dict[str, Any]:
    (step,) = [s for s in workflow["jobs"]["review"]["steps"] if s.get("id") == step_id]
    return step  # type: ignore[no-any-return]


def _expand(text: str, context: dict[str, str]) -> str:
    """``${{ a.b }}`` from the event; an expression the test does not know fails it."""
    return re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", lambda m: context[m.group(1)], text)


def _git_env() -> dict[str, str]:
    return {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """The repository on the forge: main with the agent's first turn."""
    origin = init_repo(tmp_path / "origin")
    git(origin, "config", "receive.denyCurrentBranch", "ignore")
    (origin / "README.md").write_text("app\n", encoding="utf-8")
    turn(origin, 1)
    commit_all(origin, "turn 1")
    return origin


def clone(origin: Path, path: Path, branch: str) -> Path:
    subprocess.run(["git", "clone", "-q", str(origin), str(path)], check=True, env=_git_env())
    git(path, "config", "user.name", "Dev")
    git(path, "config", "user.email", "dev@example.invalid")
    git(path, "checkout", "-q", "-b", branch)
    return path


def test_the_workflow_posts_one_review_comment_for_the_pull_requests_range_and_updates_it(
    tmp_path: Path, origin: Path
) -> None:
    """A branch adds turns 2 and 3 while main gets another thread: the comment reviews what the
    branch does to main (main's own change is not in it, as in GitHub's "Files changed"),
    starts with the marker, and a later push updates the same comment; a person's comment is
    left alone."""
    dev = clone(origin, tmp_path / "dev", "feature")
    turn(dev, 2)
    commit_all(dev, "turn 2")
    turn(dev, 3)
    commit_all(dev, "turn 3")
    git(dev, "push", "-q", "origin", "feature")
    turn(origin, 1, thread="on-main")  # the base branch moves on
    commit_all(origin, "main: another thread")

    runner = Runner(tmp_path / "runner", origin, "main", "feature")
    human = {"id": 1, "user": {"login": "alice"}, "body": MARKER + " quoting the bot"}
    runner.forge.write_text(json.dumps({"comments": [human], "calls": []}))
    work = runner.checkout()
    for step_id in ("validate", "review", "comment"):
        proc = runner.step(work, step_id)
        assert proc.returncode == 0, (step_id, proc.stdout, proc.stderr)

    (mine,) = [c for c in runner.comments() if c["user"]["login"] == BOT]
    body = mine["body"]
    merge = rev(work)
    assert rev(work, "HEAD^1") == runner.base_sha and rev(work, "HEAD^2") == runner.head_sha
    assert body.startswith(MARKER + "\n## State review: ")
    assert f"`{runner.base_sha[:12]}` .. `{merge[:12]}`" in body.splitlines()[1]
    users = [s for s in said(body) if s.startswith("user: ")]
    assert users == [f"user: {user_message(n).content}" for n in (2, 3)]
    assert "on-main" not in body and "### Thread `support-1` (changed)" in body
    summary = (work.parent / "summary.md").read_text(encoding="utf-8")
    assert body.removeprefix(MARKER + "\n") == summary

    turn(dev, 4)  # a new push to the pull request
    commit_all(dev, "turn 4")
    git(dev, "push", "-q", "origin", "feature")
    work = runner.checkout()
    for step_id in ("validate", "review", "comment"):
        assert runner.step(work, step_id).returncode == 0, step_id
    comments = runner.comments()
    assert comments[0] == human
    (mine,) = [c for c in comments if c["user"]["login"] == BOT]
    assert [s for s in said(mine["body"]) if s.startswith("user: ")][-1] == f"user: {user_message(4).content}"
    writes = [c for c in runner.calls() if c[0] != "GET"]
    assert writes == [
        ["POST", "repos/acme/agent/issues/7/comments"],
        ["PATCH", f"repos/acme/agent/issues/comments/{mine['id']}"],
    ]


def test_a_merge_that_leaves_two_heads_fails_validate_and_the_comment_says_so(
    tmp_path: Path, origin: Path
) -> None:
    """main and the branch both continued the thread: the pull request's merge has two heads
    nobody chose, so ``validate --heads`` fails the job, and the comment (still posted) shows
    the branch's turn and the heads to settle."""
    dev = clone(origin, tmp_path / "dev", "feature")
    turn(dev, 2, text="deny the refund")
    commit_all(dev, "deny")
    git(dev, "push", "-q", "origin", "feature")
    turn(origin, 2, text="approve the refund")
    commit_all(origin, "approve")

    runner = Runner(tmp_path / "runner", origin, "main", "feature")
    work = runner.checkout()
    validate = runner.step(work, "validate")
    assert validate.returncode == 1 and "head" in validate.stdout + validate.stderr
    assert runner.step(work, "review").returncode == 0
    assert runner.step(work, "comment").returncode == 0
    ((comment),) = runner.comments()
    assert comment["body"].startswith(MARKER)
    body = comment["body"]
    assert "deny the refund" in body
    assert "approve the refund" not in body  # main's turn is not the pull request's
    assert "heads to settle" in body and "Heads nobody chose" in body


def test_a_review_too_long_for_a_comment_is_posted_cut_with_its_verdict_and_every_flag(
    tmp_path: Path, origin: Path
) -> None:
    """Four turns of long questions (each shown whole up to the size rule) and a stray file
    the review flags: the review is over 60,000 characters. The comment was its title and a
    link, the flag nowhere in the pull request; it is the cut review: header, verdict, the
    flag, a line saying it was cut, the link to the whole in the job summary. The job fails
    on the flag, after the comment is posted."""
    dev = clone(origin, tmp_path / "dev", "feature")
    for n in range(2, 6):
        turn(dev, n, text=f"a very long question number {n} " * 1000)
    (dev / ".langgraph/threads/support-1/checkpoints/notes.txt").write_text("x\n", encoding="utf-8")
    commit_all(dev, "long, and a stray file")
    git(dev, "push", "-q", "origin", "feature")
    runner = Runner(tmp_path / "runner", origin, "main", "feature")
    work = runner.checkout()
    assert runner.step(work, "review").returncode == 0
    assert runner.step(work, "comment").returncode == 0
    ((comment),) = runner.comments()
    body = comment["body"]
    assert body.startswith(MARKER + "\n## State review: ") and len(body) <= 60000 + 200
    lines = body.splitlines()
    assert lines[3].startswith("**4 turns · ")  # the verdict
    assert "**This review is cut to fit a comment**" in body
    flag = [line for line in lines if line.startswith("- **not part of the layout**")]
    assert len(flag) == 1 and "notes.txt" in flag[0]
    assert "a very long question" not in body  # the turns are left out
    assert (
        lines[-1]
        == "Read the whole review in the [job summary](https://github.com/acme/agent/actions/runs/1001)."
    )
    summary = (work.parent / "summary.md").read_text(encoding="utf-8")
    assert len(summary) > 60000 and all(f"a very long question number {n}" in summary for n in range(2, 6))
    gate = runner.step(work, "gate")
    assert gate.returncode == 1 and "flagged" in gate.stdout


def test_the_job_fails_on_a_flagged_change_after_the_comment_is_posted(tmp_path: Path, origin: Path) -> None:
    """A pull request that changes the repository's ``.gitattributes`` (how a checkout writes
    the files the app reads): flagged, not a problem ``validate`` reports, so every step passed
    and the job was green. The review step passes (the review is complete), the comment is
    posted with the flag, and the last step fails the job; a clean pull request's passes."""
    dev = clone(origin, tmp_path / "dev", "feature")
    turn(dev, 2)
    commit_all(dev, "turn 2")
    git(dev, "push", "-q", "origin", "feature")
    runner = Runner(tmp_path / "runner", origin, "main", "feature")
    work = runner.checkout()
    for step_id in ("validate", "review", "comment", "gate"):
        assert runner.step(work, step_id).returncode == 0, step_id

    (dev / ".gitattributes").write_text("*.json ident\n", encoding="utf-8")
    commit_all(dev, "attributes")
    git(dev, "push", "-q", "origin", "feature")
    work = runner.checkout()
    assert runner.step(work, "validate").returncode == 0
    review = runner.step(work, "review")
    assert review.returncode == 0, review.stderr
    assert runner.outputs["steps.review.outputs.status"] == "1"
    assert runner.step(work, "comment").returncode == 0
    ((comment),) = runner.comments()
    assert "**attributes changed**" in comment["body"]
    steps = [s.get("id") for s in runner.workflow["jobs"]["review"]["steps"]]
    assert steps[-2:] == ["comment", "gate"]
    assert "steps.review.outcome == 'success'" in workflow_step(runner.workflow, "gate")["if"]
    gate = runner.step(work, "gate")
    assert gate.returncode == 1 and "::error::the review flagged" in gate.stdout


# ----------------------------------------------------------------------------
# installing outside the checkout, failing loudly, posting only a complete review
# ----------------------------------------------------------------------------
def tiny_wheel(folder: Path) -> Path:
    """A wheel of an empty package, for pip to resolve without an index (``--dry-run``)."""
    name, version = "planted_check", "0.1"
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": b"",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(
        f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}\n"
        for path, data in files.items()
    )
    files[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
    return wheel


@pytest.mark.parametrize(
    "planted",
    [
        pytest.param(("pip/__init__.py", "pip/__main__.py"), id="pip-package"),
        pytest.param(("pip.py",), id="pip.py"),
    ],
)
def test_the_install_step_never_runs_a_pip_the_pull_request_adds(
    tmp_path: Path, origin: Path, planted: tuple[str, ...]
) -> None:
    """A pull request adds ``pip/__main__.py`` (or ``pip.py``) at the top of the repository.
    The install step ran ``python -m pip`` in the checkout, so that file ran instead of pip,
    with the job's token still in .git/config. It runs pip from $RUNNER_TEMP with ``-I``: the
    real pip resolves the package (here a local wheel, ``--dry-run``, no index) and the
    planted file never runs. The checkout keeps no credentials."""
    ran = tmp_path / "planted-ran"
    dev = clone(origin, tmp_path / "dev", "feature")
    for name in planted:
        (dev / name).parent.mkdir(exist_ok=True)
        code = f"open({str(ran)!r}, 'w').write('ran')\n" if not name.endswith("__init__.py") else ""
        (dev / name).write_text(code, encoding="utf-8")
    turn(dev, 2)
    commit_all(dev, "turn 2, and a pip of its own")
    git(dev, "push", "-q", "origin", "feature")
    runner = Runner(tmp_path / "runner", origin, "main", "feature")
    work = runner.checkout()
    assert all((work / name).is_file() for name in planted)
    wheel = tiny_wheel(tmp_path)
    pip_env = {
        "PACKAGE": str(wheel),
        "PIP_DRY_RUN": "1",
        "PIP_NO_INDEX": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    proc = runner.step(work, "install", pip_env)
    assert not ran.exists(), "the pull request's pip ran"
    assert proc.returncode == 0 and "Would install planted_check-0.1" in proc.stdout, (
        proc.stdout + proc.stderr
    )
    checkout = next(
        s
        for s in runner.workflow["jobs"]["review"]["steps"]
        if s.get("uses", "").startswith("actions/checkout")
    )
    assert checkout["with"]["persist-credentials"] is False


def broken_review(bin_dir: Path, how: str) -> None:
    """A ``langgraph-repo`` first on the PATH that fails as ``how`` says: ``crash`` (review's
    report raises: a bug, in the real command line), ``cut`` (the real review's output cut
    short, exit 0: a killed pipe), ``empty`` (nothing printed, exit 0)."""
    real = Path(sys.executable).parent / "langgraph-repo"
    wrapper = bin_dir / "langgraph-repo"
    if how == "crash":
        wrapper.write_text(
            f"#!{sys.executable}\n"
            "import sys, langgraph_checkpoint_repo.review.report as report\n"
            "def broken(*args, **kwargs): raise RuntimeError('a bug in review')\n"
            "report.review = broken\n"
            "from langgraph_checkpoint_repo.cli import main\n"
            "main()\n",
            encoding="utf-8",
        )
    elif how == "cut":
        wrapper.write_text(
            f'#!/bin/bash\nstatus=0\n"{real}" "$@" > "$0.out" || status=$?\n'
            'head -c 300 "$0.out"\nexit "$status"\n',
            encoding="utf-8",
        )
    else:
        wrapper.write_text(f'#!/bin/bash\n"{real}" "$@" > /dev/null\n', encoding="utf-8")
    wrapper.chmod(0o755)


@pytest.mark.parametrize("how", ["crash", "cut", "empty"])
def test_a_review_that_fails_or_is_cut_short_fails_the_job_and_posts_nothing(
    tmp_path: Path, origin: Path, how: str
) -> None:
    """A review is posted; after the next push review crashes (exit 7: before, a traceback and
    exit 1, read as "problems shown", so the job was green and an empty comment replaced the
    review), or prints a review cut short, or nothing, with exit 0. The review step fails,
    the comment step (whose condition is the review step's success) posts nothing even when
    run, and the last review stays; the job summary says nothing was posted."""
    dev = clone(origin, tmp_path / "dev", "feature")
    turn(dev, 2)
    commit_all(dev, "turn 2")
    git(dev, "push", "-q", "origin", "feature")
    runner = Runner(tmp_path / "runner", origin, "main", "feature")
    work = runner.checkout()
    for step_id in ("review", "comment"):
        assert runner.step(work, step_id).returncode == 0
    (posted,) = runner.comments()

    turn(dev, 3)
    commit_all(dev, "turn 3")
    git(dev, "push", "-q", "origin", "feature")
    work = runner.checkout()
    broken_review(runner.bin, how)
    review = runner.step(work, "review")
    assert review.returncode != 0, review.stdout + review.stderr
    if how == "crash":
        assert review.returncode == 7 and "unexpected RuntimeError" in review.stderr
        assert "Traceback" not in review.stderr
    assert "steps.review.outcome == 'success'" in workflow_step(runner.workflow, "comment")["if"]
    assert runner.step(work, "comment").returncode != 0  # run anyway: it has nothing to post
    assert runner.comments() == [posted]
    assert [c[0] for c in runner.calls()] == ["GET", "POST"]  # the first push's, nothing since
    summary = (work.parent / "summary.md").read_text(encoding="utf-8")
    assert "nothing was posted" in summary and "State review" not in summary


def test_the_workflow_knows_the_last_line_of_a_complete_review() -> None:
    from langgraph_checkpoint_repo.cli.review import MARKDOWN_END

    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert workflow["env"]["REVIEW_END"] == MARKDOWN_END


def test_a_hostile_pull_request_cannot_rewrite_the_comment_or_the_job_summary(
    tmp_path: Path, origin: Path
) -> None:
    """A pull request whose agent called a tool named to close the fold, fake an approval and
    hide the rest: the comment and the job summary the workflow writes are its review, inert
    (tests/test_markdown_inert.py's rules), the tool's name shown."""
    from test_markdown_inert import LONG, TOOL, agent_turn, assert_inert

    dev = clone(origin, tmp_path / "dev", "feature")
    agent_turn(dev / ".langgraph", "hostile", TOOL, LONG)
    commit_all(dev, "a hostile turn")
    git(dev, "push", "-q", "origin", "feature")
    runner = Runner(tmp_path / "runner", origin, "main", "feature")
    work = runner.checkout()
    for step_id in ("review", "comment"):
        assert runner.step(work, step_id).returncode == 0
    ((comment),) = runner.comments()
    body = comment["body"].removeprefix(MARKER + "\n")
    assert body == (work.parent / "summary.md").read_text(encoding="utf-8")
    assert_inert(body, TOOL, f"tool {TOOL}")


def test_a_pull_request_that_edits_a_checkpoint_of_main_in_place_fails_validate_and_is_flagged(
    tmp_path: Path, origin: Path
) -> None:
    """History rewritten: the branch changes a file main has (here its metadata, a valid edit
    that needs no re-hashing). ``validate --base`` fails the job, naming the file; the comment
    (still posted) says so first, before any thread."""
    dev = clone(origin, tmp_path / "dev", "feature")
    first = sorted((dev / ".langgraph/threads/support-1/checkpoints").glob("*.json"))[1]
    doc = json.loads(first.read_text(encoding="utf-8"))
    doc["metadata"]["source"] = "update"
    first.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    commit_all(dev, "rewrite history")
    git(dev, "push", "-q", "origin", "feature")
    runner = Runner(tmp_path / "runner", origin, "main", "feature")
    work = runner.checkout()
    validate = runner.step(work, "validate")
    assert validate.returncode == 1 and f"{first.name}: /: changed since" in validate.stdout
    assert runner.step(work, "review").returncode == 0  # 1 from review: problems shown, not a failure
    assert runner.step(work, "comment").returncode == 0
    ((comment),) = runner.comments()
    body = comment["body"]
    assert body.index("history rewritten") < body.index("### Thread")
