"""The HTML view (issue 35, item 9): ``review --html FILE`` and ``render --html FILE`` write one
self-contained page, from real graph runs in a real git repository.

The page is parsed with the standard library's HTML parser, which tokenises as a browser
does (tags, attributes, comments, declarations, raw text of ``<style>``), and must hold only
the program's own markup: the tags below, attributes only the program makes (classes from a
fixed set, ids from counters, links to those ids), the one stylesheet of cli/html.py, the
head's own ``<meta>``, no comment, no script, nothing that loads anything. The hostile names
and texts are tests/test_markdown_inert.py's (a tool, a node, a channel, thread ids,
interrupt and resume values, store items, files), from the same kind of real runs; the data
must still be shown, as text.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from bench.agent_graphs import build_create_agent, user_message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import test_markdown_inert as inert
from graphs import cfg
from helpers import cli, examples
from langgraph_checkpoint_repo import RepoSaver, RepoStore
from langgraph_checkpoint_repo.cli.exits import INTERNAL
from langgraph_checkpoint_repo.cli.html import CSP, CSS
from langgraph_checkpoint_repo.cli.output import screen
from langgraph_checkpoint_repo.core.layout import decode_segment
from test_git import commit_all, git, init_repo

hostile = inert.hostile  # the fixture: a repository of hostile names from real runs
corpus_repo = inert.corpus_repo
accepted = inert.accepted  # main: an agent's turn; HEAD: a second, an answered interrupt, a memory

# ----------------------------------------------------------------------------
# what the data may not do to the page
# ----------------------------------------------------------------------------
#: the tags the program writes; the page must hold no other (restated here, not imported:
#: a tag the module starts writing is a decision this list must make too)
ALLOWED_TAGS = frozenset(
    "html head meta title style body header main section footer h1 h2 h3 h4 p ul ol li "
    "details summary code pre table thead tbody tr th td span a strong div".split()
)
VOID = frozenset({"meta"})
#: the classes the program gives its elements
ALLOWED_CLASSES = frozenset(
    "attention clear tag bad warn ok dim meta turns turn events human ai tool system ask answer "
    "failed other who call fold changes tree lanes head continues unsettled settled base line next "
    "nested store thread subgraph fork facts".split()
)
#: the ids the program makes: from counters and its own section names, never from data
OWN_ID = re.compile(
    r"t\d+(-n\d+(-l\d+(-\d+)?|-next)?|-problems)?|turn-\d+|branch-\d+(-\d+)?|store(-\d+)?"
    r"|conversation|waiting|next|state|history|branches"
)
#: the head's own <meta> elements, exactly
OWN_META = [
    [("charset", "utf-8")],
    [("http-equiv", "Content-Security-Policy"), ("content", CSP)],
    [("name", "referrer"), ("content", "no-referrer")],
    [("name", "viewport"), ("content", "width=device-width, initial-scale=1")],
]


class Page(HTMLParser):
    """Every piece of markup of a page, and its text (character references resolved)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.starts: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.problems: list[str] = []
        self.stack: list[str] = []
        self.text: list[str] = []
        self.styles: list[str] = []
        self.decls: list[str] = []
        self.in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.starts.append((tag, attrs))
        if tag not in VOID:
            self.stack.append(tag)
        self.in_style = tag == "style"

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.problems.append(f"self-closing tag <{tag}/>")
        self.starts.append((tag, attrs))

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()
        self.in_style = False

    def handle_data(self, data: str) -> None:
        (self.styles if self.in_style else self.text).append(data)

    def handle_comment(self, data: str) -> None:
        self.problems.append(f"a comment: <!--{data}-->")

    def handle_decl(self, decl: str) -> None:
        self.decls.append(decl)

    def unknown_decl(self, data: str) -> None:
        self.problems.append(f"a declaration: <![{data}]>")

    def handle_pi(self, data: str) -> None:
        self.problems.append(f"a processing instruction: <?{data}>")


def parse(page: str) -> Page:
    parsed = Page()
    parsed.feed(page)
    parsed.close()
    return parsed


def page_problems(page: str) -> list[str]:
    """What in ``page`` is not the program's own markup."""
    parsed = parse(page)
    problems = list(parsed.problems)
    if parsed.decls != ["DOCTYPE html"]:
        problems.append(f"declarations {parsed.decls}")
    if parsed.stack:
        problems.append(f"left open: {parsed.stack}")
    ids = [v for _, attrs in parsed.starts for k, v in attrs if k == "id"]
    if len(ids) != len(set(ids)):
        problems.append("an id used twice")
    metas = []
    for tag, attrs in parsed.starts:
        if tag not in ALLOWED_TAGS:
            problems.append(f"tag <{tag}> {attrs}")
            continue
        if tag == "meta":
            metas.append(attrs)
            continue
        for name, value in attrs:
            if (tag, name, value) == ("html", "lang", "en") or (tag, name, value) == (
                "details",
                "open",
                None,
            ):
                continue
            if name == "class" and value and set(value.split()) <= ALLOWED_CLASSES:
                continue
            if name == "id" and value and OWN_ID.fullmatch(value):
                continue
            if tag == "a" and name == "href" and value and value[1:] in ids and value[0] == "#":
                continue
            problems.append(f"attribute {name}={value!r} on <{tag}>")
    if metas != OWN_META:
        problems.append(f"head metas {metas}")
    if parsed.styles != [f"\n{CSS}\n"]:
        problems.append("a style that is not the program's stylesheet")
    if re.search(r"url\(|@import|//", CSS):
        problems.append("the stylesheet loads something")
    return problems


def text_of(page: str) -> str:
    return "".join(parse(page).text)


def assert_own_page(page: str, *names: str) -> None:
    """Only the program's markup, and every name shown as text (screened, as everywhere)."""
    problems = page_problems(page)
    assert not problems, "\n".join(problems)
    text = text_of(page)
    missing = [n for n in names if screen(n, keep="") not in text]
    assert not missing, f"not shown: {missing}"


def write(root: Path, cwd: Path, out: Path, *args: str, code: int = 0) -> str:
    """Run a command with ``--html out``; the page it wrote."""
    proc = cli(root, *args, "--html", out, cwd=cwd)
    assert proc.returncode == code, proc.stdout + proc.stderr
    return out.read_text(encoding="utf-8")


# ----------------------------------------------------------------------------
# hostile names and texts from real runs
# ----------------------------------------------------------------------------
def test_a_review_page_of_hostile_names_holds_only_the_programs_markup(hostile: Path, tmp_path: Path) -> None:
    """Thread ids, the root's folder, a subgraph's namespace under a hostile node, a tool, node
    and channel names, interrupt and resume values, long texts (folded), store namespace, key
    and fields, a stray file's name in a flag and a problem: all shown as text, none markup."""
    root = hostile / inert.FOLDER / ".langgraph"
    page = write(root, hostile, tmp_path / "review.html", "review", "HEAD~1..HEAD", code=1)
    names = [inert.THREAD, f"{inert.THREAD} ask", inert.FOLDER, inert.CHANNEL, inert.TOOL, inert.NODE]
    assert_own_page(page, *names, inert.STRAY, f"tool {inert.TOOL}")
    assert screen(inert.LONG.strip(), keep="") in text_of(page)  # folded whole, as text


@pytest.mark.parametrize("which", ["agent", "ask", "waits", "sub"])
def test_a_render_page_of_a_hostile_thread_holds_only_the_programs_markup(
    hostile: Path, tmp_path: Path, which: str
) -> None:
    """render --html of each hostile thread (a hostile tool; a node's interrupt answered; one
    waiting; a subgraph under a hostile node): title, status, conversation, waiting, state,
    next tasks, the fork tree's labels."""
    thread = inert.THREAD if which == "agent" else f"{inert.THREAD} {which}"
    root = hostile / inert.FOLDER / ".langgraph"
    page = write(root, hostile, tmp_path / "render.html", "render", thread)
    names = [thread, inert.TOOL] if which == "agent" else [thread, inert.NODE]
    if which == "sub":
        names.append(f"{inert.NODE}:")  # the subgraph call's namespace, under its turn
    assert_own_page(page, *names)


@settings(
    max_examples=examples(3),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    tool=inert.NAME.filter(lambda s: "\x00" not in s),
    thread=inert.NAME.filter(lambda s: s.isprintable()),
    text=inert.TEXT,
    key=inert.NAME,
)
def test_hostile_texts_from_a_real_run_are_text_in_both_pages(
    corpus_repo: Path, tool: str, thread: str, text: str, key: str
) -> None:
    """Any text as a tool's name, a thread id, what the user, the model and the tool say (long:
    folded), a store key and field, from a real ``create_agent`` run and a store put,
    committed: both pages hold only the program's markup and show each name."""
    repo, root = corpus_repo, corpus_repo / ".langgraph"
    thread = f"t {thread}"
    long = (text + " ") * (170 // (len(text) + 1) + 1)
    inert.agent_turn(root, thread, tool, long)
    RepoStore(root).put(("n", "m"), key, {key: long})
    commit_all(repo, "hostile run")
    out = repo.parent / "page.html"
    try:
        review = write(root, repo, out, "review", "HEAD~1..HEAD")
        assert_own_page(review, thread, tool, key)
        render = write(root, repo, out, "render", thread)
        assert_own_page(render, thread, tool)
    finally:
        git(repo, "reset", "-q", "--hard", "HEAD~1")


def test_a_key_in_a_thread_id_is_masked_in_both_pages(corpus_repo: Path, tmp_path: Path) -> None:
    """A key carried in a thread id (the saver redacts keys in values, not in ids): masked to
    its first characters in both pages, as in everything the program prints (docs/secrets.md),
    in the text and in the folder names of paths."""
    repo, root = corpus_repo, corpus_repo / ".langgraph"
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 3
    inert.agent_turn(root, f"t {key}", "lookup", "hello")
    commit_all(repo, "a key")
    try:
        for args in (["review", "HEAD~1..HEAD"], ["render", f"t {key}"]):
            proc = cli(root, *args, "--html", tmp_path / "page.html", cwd=repo)
            assert proc.returncode in (0, 1), proc.stderr
            page = (tmp_path / "page.html").read_text(encoding="utf-8")
            assert key[:12] not in page and "A1b2C3d4" not in page and "t sk-p…" in text_of(page)
    finally:
        git(repo, "reset", "-q", "--hard", "HEAD~1")


@settings(
    max_examples=examples(3),
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)
@given(data=st.data())
def test_no_shape_validate_accepts_makes_a_page_fail_or_hold_markup_of_its_own(
    accepted: Path, tmp_path: Path, data: st.DataObject
) -> None:
    """test_markdown_inert's mutations of what validate does not type (a message's field, a
    channel's or a write's value, the metadata, a store value), committed: when validate
    accepts the files, both pages are written (exit 0) and hold only the program's markup;
    whatever validate says, neither ends in an unexpected error."""
    repo, root = accepted, accepted / ".langgraph"
    paths = []
    try:
        for _ in range(data.draw(st.integers(1, 3), label="changes")):
            path = data.draw(st.sampled_from(inert.changed_files(repo)), label="file")
            places = inert.free_places(json.loads((repo / path).read_bytes()))
            kind = data.draw(st.sampled_from(sorted(places)), label="kind")
            place = data.draw(st.sampled_from(places[kind]), label="place")
            value = data.draw(inert.values_for(inert._current(repo / path, place)), label="value")
            inert.forge(repo, path, lambda d, place=place, value=value: inert.mutate(d, place, value))
            paths.append(path)
        inert.commit_forged(repo)
        valid = cli(root, "validate", cwd=repo).returncode
        threads = {decode_segment(p.split("/")[2]) for p in paths if p.split("/")[1] == "threads"}
        for args in [["review", "HEAD~2..HEAD"], *(["render", t] for t in sorted(threads))]:
            out = tmp_path / "page.html"
            out.unlink(missing_ok=True)
            proc = cli(root, *args, "--html", out, cwd=repo)
            assert proc.returncode != INTERNAL and "Traceback" not in proc.stderr, proc.stderr
            if valid == 0:
                assert proc.returncode == 0, proc.stderr
                problems = page_problems(out.read_text(encoding="utf-8"))
                assert not problems, "\n".join(problems)
    finally:
        git(repo, "reset", "-q", "--hard", "turn-2")


def test_what_needs_attention_comes_first_and_links_to_where_it_is(hostile: Path, tmp_path: Path) -> None:
    """The review of the hostile commit: a stray file (flagged), validate's problems, a thread
    waiting for an answer. Each is listed in the attention box before any thread, and the
    waiting one links to the thread's "next"."""
    root = hostile / inert.FOLDER / ".langgraph"
    page = write(root, hostile, tmp_path / "review.html", "review", "HEAD~1..HEAD", code=1)
    box = page[page.index('<section class="attention">') : page.index("</section>")]
    assert page.index('<section class="attention">') < page.index('<section class="thread"')
    text = text_of(box)
    assert "not part of the layout" in text and "invalid" in text
    waiting = [li for li in box.split("<li>") if "waiting" in li]
    assert waiting and re.search(r'href="#t\d+-n\d+-next"', waiting[0])


# ----------------------------------------------------------------------------
# the support desk: subgraph calls, an approval, a tool error, a memory
# ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bench/support_desk.py as issue 35 tried it: main with two turns (an order, a stock check
    whose tool fails), the branch ``feature`` with three (a refund a human approves, a memory,
    an order)."""
    from bench.support_desk import approve, build_support_desk, user_turn

    repo = init_repo(tmp_path_factory.mktemp("desk") / "repo")
    root = repo / ".langgraph"
    (repo / "README.md").write_text("app\n", encoding="utf-8")
    commit_all(repo, "start")

    def graph() -> Any:
        return build_support_desk(RepoSaver(root, durable=False), RepoStore(root))

    for n in (1, 2):
        user_turn(graph(), n)
    commit_all(repo, "two turns")
    git(repo, "checkout", "-q", "-b", "feature")
    user_turn(graph(), 3)
    approve(graph())
    user_turn(graph(), 4)
    user_turn(graph(), 5)
    commit_all(repo, "refund approved, a memory, an order")
    return repo


def _failed_rows(page: str) -> list[str]:
    return [text_of(m) for m in re.findall(r'<li class="failed">.*?</li>', page)]


def test_the_support_desk_review_page_shows_the_approval_the_memory_and_the_calls_folded(
    desk: Path, tmp_path: Path
) -> None:
    """review main..feature --html: the refund's question and its answer, the tool calls
    folded (each call's arguments in the fold), the memory the branch wrote; nothing flagged
    (the attention box lists a failed tool at most)."""
    page = write(desk / ".langgraph", desk, tmp_path / "r.html", "review", "main..feature")
    assert_own_page(page, "desk-1")
    text = text_of(page)
    assert "Approve a refund of $18.50 for A-1001?" in text and '"approved":true' in text
    box = page[page.index('<section class="attention') : page.index("</section>")]
    items = re.findall(r"<li>(.*?)</li>", box)
    assert all("✗ error" in text_of(i) for i in items)  # a failed tool at most: nothing flagged
    calls = re.findall(r"<details class=\"call\"><summary>(.*?)</summary>(.*?)</details>", page, re.S)
    assert any("issue_refund" in s and '"amount": 18.5' in text_of(body) for s, body in calls)
    store = page[page.index('<section class="store"') :]
    assert "customers.ada" in text_of(store) and "prefers email updates" in text_of(store)


def test_the_support_desk_render_page_shows_subgraph_calls_the_approval_the_tool_error_and_the_memory(
    desk: Path, tmp_path: Path
) -> None:
    """render desk-1 --html: each turn with the subgraph call its ``agent`` node made (folded,
    what the call added), the approval, the failed tool marked and listed first, the memory
    under the turn that wrote it, and the fork tree with the head that continues marked."""
    page = write(desk / ".langgraph", desk, tmp_path / "d.html", "render", "desk-1")
    assert_own_page(page, "desk-1")
    turns = re.findall(r'<li class="turn" id="turn-(\d+)">(.*?)</ul>(.*?)</li>\n', page, re.S)
    assert [n for n, _, _ in turns] == ["1", "2", "3", "4", "5"]
    assert all('<details class="subgraph"><summary>subgraph call <code>agent</code>' in t for *_, t in turns)
    stock = text_of(turns[1][1])
    assert "✗ error" in stock and "Warehouse API timed out" in stock
    assert any("check_stock" in row for row in _failed_rows(page))
    box = text_of(page[page.index('<section class="attention">') : page.index("</section>")])
    assert "✗ error" in box and "Warehouse API timed out" in box
    refund = text_of(turns[2][1])
    assert "Approve a refund of $18.50 for A-1001?" in refund and '"approved":true' in refund
    memory = text_of(turns[3][2])
    assert "memories written during this turn" in memory and "prefers email updates" in memory
    assert "memories" not in text_of(turns[4][2])
    assert page.count('<tr class="head continues">') == 1


def test_a_subgraph_call_inside_a_subgraph_call_is_folded_inside_it(tmp_path: Path) -> None:
    """A parent graph whose node ``outer`` is a graph whose node ``inner`` is a graph: each
    call has its namespace (``outer:<task>``, ``outer:<task>|inner:<task>``). render --html
    folds the inner call inside the outer one, under the turn, each with what it added."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import END, START, MessagesState, StateGraph

    def graph(name: str, node: Any) -> Any:
        builder = StateGraph(MessagesState)
        builder.add_node(name, node)
        builder.add_edge(START, name)
        builder.add_edge(name, END)
        return builder

    def say(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content="said deep inside", id="deep")]}

    inner = graph("speak", say).compile()
    outer = graph("inner", inner).compile()
    root = tmp_path / ".langgraph"
    parent = graph("outer", outer).compile(checkpointer=RepoSaver(root, durable=False))
    parent.invoke({"messages": [HumanMessage(content="go", id="u1")]}, cfg("nest"))
    page = write(root, tmp_path, tmp_path / "n.html", "render", "nest")
    assert_own_page(page, "nest")
    (turn,) = re.findall(r'<li class="turn" id="turn-1">(.*?)</li>\n', page, re.S)
    outer_call = turn[turn.index("subgraph call <code>outer</code>") :]
    assert "subgraph call <code>inner</code>" in outer_call
    inner_call = outer_call[outer_call.index("subgraph call <code>inner</code>") :]
    assert "said deep inside" in text_of(inner_call) and "go" not in text_of(inner_call)


# ----------------------------------------------------------------------------
# a 30-turn thread with a fork: the page's size
# ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def long_thread(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``create_agent`` thread of 30 tool-calling turns (10 on main, 20 more on HEAD) and a
    fork: turn 31 run again from before turn 25, so two heads nobody chose."""
    repo = init_repo(tmp_path_factory.mktemp("long") / "repo")
    root = repo / ".langgraph"
    agent = build_create_agent(RepoSaver(root, durable=False))
    for n in range(1, 11):
        agent.invoke({"messages": [user_message(n)]}, cfg("long"))
    commit_all(repo, "ten turns")
    git(repo, "tag", "ten")
    for n in range(11, 31):
        agent.invoke({"messages": [user_message(n)]}, cfg("long"))
    history = list(agent.get_state_history(cfg("long")))
    # the end of turn 24 (four messages a turn), where turn 25 began
    before = next(s for s in history if not s.next and len(s.values.get("messages", [])) == 24 * 4)
    agent.invoke({"messages": [user_message(31)]}, before.config)
    commit_all(repo, "twenty more and a fork")
    return repo


def test_the_page_of_a_30_turn_thread_with_a_fork_is_under_500_kb(long_thread: Path, tmp_path: Path) -> None:
    """render and review of the 30 turns and the fork: each page under 500 KB, the fork drawn
    (the head that continues and the one to settle marked), every turn there."""
    root = long_thread / ".langgraph"
    render = write(root, long_thread, tmp_path / "render.html", "render", "long")
    review = write(root, long_thread, tmp_path / "review.html", "review", "ten..HEAD")
    for page in (render, review):
        assert len(page.encode()) < 500_000
        assert not page_problems(page)
        assert page.count('<tr class="head continues">') == 1
        assert page.count('<tr class="head unsettled">') == 1
    assert len(re.findall(r'<li class="turn" id="turn-\d+">', render)) == 25  # 24 shared + the fork's


# ----------------------------------------------------------------------------
# the file
# ----------------------------------------------------------------------------
def test_the_page_is_written_whole_beside_the_chosen_output(desk: Path, tmp_path: Path) -> None:
    """``--html`` adds the page: ``--markdown`` still prints the comment; a page already
    there is replaced at once (no temporary file left); a missing folder is an error that
    names the path, exit 2, and writes nothing."""
    root = desk / ".langgraph"
    out = tmp_path / "review.html"
    out.write_text("old", encoding="utf-8")
    proc = cli(root, "review", "main..feature", "--markdown", "--html", out, cwd=desk)
    assert proc.returncode == 0 and proc.stdout.startswith("## State review")
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["review.html"]
    missing = tmp_path / "no" / "page.html"
    for args in (["review", "main..feature"], ["render", "desk-1"]):
        proc = cli(root, *args, "--html", missing, cwd=desk)
        assert proc.returncode == 2 and str(missing) in proc.stderr
        assert not missing.parent.exists()


def test_the_approval_alone_is_shown_in_a_page(desk: Path, tmp_path: Path) -> None:
    """A thread stopped at the refund's question: the page lists it as waiting, first."""
    from bench.support_desk import build_support_desk, user_turn

    root = desk / ".langgraph"
    user_turn(build_support_desk(RepoSaver(root, durable=False), RepoStore(root)), 3, thread="desk-wait")
    try:
        page = write(root, desk, tmp_path / "w.html", "render", "desk-wait")
        box = text_of(page[page.index('<section class="attention">') : page.index("</section>")])
        assert "waiting" in box and "Approve a refund of $18.50 for A-1001?" in box
        assert_own_page(page, "desk-wait")
    finally:
        git(desk, "clean", "-qfdx", ".langgraph")
        git(desk, "checkout", "-q", "--", ".langgraph")
