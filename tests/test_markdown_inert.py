"""Markdown that data cannot rewrite, and a review that fails loudly (issue 34, items 5 and 6).

The Markdown of ``review --markdown`` (the pull-request comment and the job summary) and of
``render`` is parsed with markdown-it-py (CommonMark, raw HTML on, GFM tables), as GitHub
parses it before it sanitises: no HTML from the data may survive (only the program's own
``<details>``, ``<summary>`` and ``<code>``, without attributes, in their nesting), no link,
image, mention, issue or commit reference from the data may become live, no heading or table
cell may come from the data, and the data must still be shown. The hostile names and texts
come from real graph runs where a graph can hold them (a ``create_agent`` whose fake chat
model calls a tool with a hostile name, a graph whose node and channel have hostile names,
hostile thread ids, interrupt and resume values, store namespaces, keys and fields), and from
files forged and committed where it cannot (a stray file's name in a problem, another file
under the root, the root's own folder).

The second half mutates what a real root holds in the places validate does not type (message
fields, channel and write values, metadata, store values), commits it, and checks that when
validate accepts the files, review, render and show render them (exit 0), and that whatever
validate says, no command ends in an unexpected error (exit 7, cli/exits.py).
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Annotated, Any

import pytest
from bench.agent_graphs import FakeToolModel, build_create_agent, user_message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from markdown_it import MarkdownIt
from markdown_it.token import Token
from typing_extensions import TypedDict

from graphs import ask_graph, cfg
from helpers import cli, examples
from langgraph_checkpoint_repo import RepoSaver, RepoStore
from langgraph_checkpoint_repo.cli.output import screen
from langgraph_checkpoint_repo.core.format.canonical import dump_json
from langgraph_checkpoint_repo.core.format.objects import names_object, object_digest
from langgraph_checkpoint_repo.core.layout import Layout, decode_segment
from langgraph_checkpoint_repo.readmodel.reader import Reader
from test_git import commit_all, git, init_repo

# ----------------------------------------------------------------------------
# what the data may not do to the Markdown
# ----------------------------------------------------------------------------
#: CommonMark with raw HTML on, and GFM's tables and strikethrough: what GitHub parses
MD = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])

#: the HTML the program writes, one HTML block each: a fold's head (its label plain or in a
#: ``<code>``) and its end
OWN_HTML = (
    ["details", "summary", "/summary"],
    ["details", "summary", "code", "/code", "/summary"],
    ["/details"],
)

#: the headings the program writes (their Markdown source starts so)
OWN_HEADINGS = (
    "State review: ",
    "Thread ",
    "Store: ",
    "State",
    "Waiting for input",
    "Next tasks",
    "History",
    "Heads to settle",
)

#: what GitHub makes live in text outside code: a URL or a scheme, ``www.``, a mention, an
#: issue, a commit hash, an emoji; and any ``<``, ``>`` or ``&`` left as text
LIVE = re.compile(
    r"(?i)[a-z]+:(?:/|\\)|//|www\.|@[a-z0-9]|#[0-9]|\b[0-9a-f]{7,}\b|:[a-z_+-][a-z0-9_+-]*:|:[0-9]{3,}:|[<>&]"
)


class _Html(HTMLParser):
    """The tags (``/name`` for an end tag, attributes noted), comments and other markup of an
    HTML block, and its text outside and inside ``<code>``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.other: list[str] = []
        self.text: list[str] = []
        self.code: list[str] = []
        self.in_code = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(f"{tag}{attrs}" if attrs else tag)
        self.in_code = tag == "code"

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(f"{tag}/{attrs}")

    def handle_endtag(self, tag: str) -> None:
        self.tags.append(f"/{tag}")
        self.in_code = False

    def handle_data(self, data: str) -> None:
        (self.code if self.in_code else self.text).append(data)

    def handle_comment(self, data: str) -> None:
        self.other.append(f"<!--{data}-->")

    def handle_decl(self, decl: str) -> None:
        self.other.append(f"<!{decl}>")

    def unknown_decl(self, data: str) -> None:
        self.other.append(f"<![{data}]>")

    def handle_pi(self, data: str) -> None:
        self.other.append(f"<?{data}>")


def markdown_problems(markdown: str) -> list[str]:
    """What in ``markdown`` did not come from the program: HTML other than its own folds (or
    out of their nesting), links, images, live text outside code, headings and table cells."""
    problems: list[str] = []
    tokens = MD.parse(markdown)
    folded = False
    cells: list[int] = []
    for i, tok in enumerate(tokens):
        if tok.type == "html_block":
            parsed = _Html()
            parsed.feed(tok.content)
            parsed.close()
            if parsed.other or parsed.tags not in OWN_HTML:
                problems.append(f"HTML block not the program's own: {tok.content!r}")
                continue
            problems += [f"live text in a fold's label: {t!r}" for t in parsed.text if LIVE.search(t)]
            if (parsed.tags[0] == "details") == folded:
                problems.append(f"a fold opened inside a fold or closed outside one: {tok.content!r}")
            folded = parsed.tags[0] == "details"
        elif tok.type == "heading_open":
            source = tokens[i + 1].content
            if not source.startswith(OWN_HEADINGS):
                problems.append(f"a heading the program does not write: {source!r}")
        elif tok.type == "tr_open":
            cells.append(0)
        elif tok.type in ("th_open", "td_open"):
            cells[-1] += 1
        elif tok.type == "table_close":
            if len(set(cells)) > 1:
                problems.append(f"table rows of different lengths (a cell from the data): {cells}")
            cells = []
        elif tok.type == "inline":
            problems += _inline_problems(tok.children or [])
    if folded:
        problems.append("a fold left open")
    return problems


def _inline_problems(children: list[Token]) -> list[str]:
    out = []
    for child in children:
        if child.type in ("html_inline", "link_open", "image"):
            out.append(f"{child.type} from the data: {child.content or child.attrs!r}")
        elif child.type == "text" and LIVE.search(child.content):
            out.append(f"live text outside code: {child.content!r}")
    return out


def shown(markdown: str) -> str:
    """Everything ``markdown`` shows as code (code spans, fenced blocks, ``<code>`` in a
    fold's label) or as plain text (a name with no markup, such as a tool named ``0``, is
    shown bare), one item per line: where the data must be."""
    out: list[str] = []
    for tok in MD.parse(markdown):
        if tok.type == "fence":
            out.append(tok.content)
        elif tok.type == "html_block":
            parsed = _Html()
            parsed.feed(tok.content)
            out += parsed.code
        for child in tok.children or []:
            if child.type in ("code_inline", "text"):
                out.append(child.content)
    return "\n".join(out)


def as_shown(text: str) -> str:
    """A name as the Markdown shows it: screened to one line, as every output screens it."""
    return screen(text, keep="")


def assert_inert(markdown: str, *names: str) -> None:
    problems = markdown_problems(markdown)
    assert not problems, "\n".join(problems) + "\n\n" + markdown
    code = shown(markdown)
    missing = [n for n in names if as_shown(n) not in code]
    assert not missing, f"not shown: {missing}\n\n{markdown}"


# ----------------------------------------------------------------------------
# hostile names and texts, and the graphs that hold them
# ----------------------------------------------------------------------------
#: the issue's tool name: closes the fold, fakes an approval, embeds an image, hides the rest
TOOL = "</summary></details><h2>Approved</h2><img src=https://e.vil/x.png><!--"
#: a node name (no ``:`` or ``|``: LangGraph's own) that starts with ``(`` as ``render``'s own
#: ``(input)`` does, and would close a table cell, embed an image, mention and link
NODE = "(input)</td><td><img src=//e.vil/y.png> @octocat [click](//e.vil) <!--"
CHANNEL = "<b>chan</b> @octocat #1"
THREAD = "<img src=x onerror=alert(1)> @octocat #1 [x](https://e.vil) deadbeefcafe"
#: over 160 characters: folded into a ``<details>`` whose label names the tool or the node
LONG = "<details open><summary>x</summary><script>alert(1)</script> @octocat ![i](https://e.vil/i.png) " * 3
#: the folder the root lives in, shown as the review's root
FOLDER = "<img src=x> @octocat :+1:"
#: a file name under the root (a stray entry, another file changed)
STRAY = "<img src=x> @octocat [x](https:\\e.vil) #1 :+1: GH-1"


class ScriptedModel(FakeToolModel):
    """Calls the tool ``tool_name`` once with ``say`` as its argument, then answers ``say``."""

    tool_name: str
    say: str

    def respond(self, messages: Sequence[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return AIMessage(content=f"answer {self.say}", id="ai-answer")
        call = {"name": self.tool_name, "args": {"q": self.say}, "id": "call-1"}
        return AIMessage(content=self.say, tool_calls=[call], id="ai-call")


def named_tool(name: str, result: str) -> BaseTool:
    """A tool called ``name`` that answers ``result``."""

    def run(q: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
        return ToolMessage(content=result, name=name, tool_call_id=tool_call_id, id=f"tool-{tool_call_id}")

    return StructuredTool.from_function(run, name=name, description="a tool with the name it is given")


def agent_turn(root: Path, thread_id: str, tool: str, text: str) -> None:
    """One turn of ``create_agent``: the user says ``text``, the model calls ``tool`` with it,
    the tool answers it, the model answers it."""
    model = ScriptedModel(tool_name=tool, say=text)
    agent = create_agent(model, [named_tool(tool, text)], checkpointer=RepoSaver(root, durable=False))
    agent.invoke({"messages": [HumanMessage(content=text, id="user-1")]}, cfg(thread_id))


HostileState = TypedDict("HostileState", {CHANNEL: str, "answer": str}, total=False)


def hostile_node_graph(saver: RepoSaver) -> Any:
    """START -> NODE -> END; NODE asks ``LONG`` (an interrupt) and keeps the answer."""

    def ask(state: dict[str, Any]) -> dict[str, Any]:
        return {"answer": interrupt(LONG)}

    graph = StateGraph(HostileState)
    graph.add_node(NODE, ask)
    graph.add_edge(START, NODE)
    graph.add_edge(NODE, END)
    return graph.compile(checkpointer=saver)


def outer_graph(saver: RepoSaver) -> Any:
    """A subgraph under a node named NODE: its checkpoints live in the namespace ``NODE:<task>``."""
    graph = StateGraph(HostileState)
    graph.add_node(NODE, hostile_node_graph(None))  # type: ignore[arg-type]
    graph.add_edge(START, NODE)
    graph.add_edge(NODE, END)
    return graph.compile(checkpointer=saver)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository whose head commit holds, under a root in a hostile folder: a create_agent
    turn calling the hostile TOOL on thread THREAD; NODE's interrupt answered (``THREAD ask``),
    one left waiting (``THREAD waits``) and one inside a subgraph (``THREAD sub``), with the
    hostile CHANNEL; a store item with hostile namespace, key and fields; and, forged, a stray
    entry and another file with hostile names. The base commit has none of it."""
    repo = init_repo(tmp_path_factory.mktemp("inert") / "repo")
    (repo / "README.md").write_text("app\n", encoding="utf-8")
    commit_all(repo, "start")
    root = repo / FOLDER / ".langgraph"
    agent_turn(root, THREAD, TOOL, LONG)
    saver = RepoSaver(root, durable=False)
    hostile_node_graph(saver).invoke({CHANNEL: LONG}, cfg(f"{THREAD} ask"))
    hostile_node_graph(saver).invoke(Command(resume=LONG), cfg(f"{THREAD} ask"))
    hostile_node_graph(saver).invoke({CHANNEL: THREAD}, cfg(f"{THREAD} waits"))
    outer_graph(saver).invoke({CHANNEL: THREAD}, cfg(f"{THREAD} sub"))
    label = THREAD.replace(".", "")  # a store namespace label holds no period
    RepoStore(root).put((label, CHANNEL), TOOL, {NODE: LONG, "plain": TOOL})
    stray = Layout(root).thread_dir(f"{THREAD} ask") / STRAY
    stray.mkdir()
    (stray / "x.json").write_text("{}\n", encoding="utf-8")
    (root / f"{STRAY}.txt").write_text("x\n", encoding="utf-8")
    commit_all(repo, "hostile")
    return repo


def run(repo: Path, *args: str, code: int = 0) -> str:
    proc = cli(repo / FOLDER / ".langgraph", *args, cwd=repo)
    assert proc.returncode == code, proc.stdout + proc.stderr
    return proc.stdout


# ----------------------------------------------------------------------------
# review --markdown and render, of real hostile names
# ----------------------------------------------------------------------------
def test_a_tool_name_cannot_close_the_fold_fake_an_approval_or_hide_the_comment(hostile: Path) -> None:
    """The issue's case: a tool named ``</summary></details><h2>Approved</h2><img …><!--``
    whose result is long enough to be folded. Its name is shown escaped in the fold's
    ``<code>`` label: no heading, image or comment from it, every fold closed where the
    program closes it, and the review goes on to its last line."""
    out = run(hostile, "review", "HEAD~1..HEAD", "--markdown", code=1)  # the stray entry
    labels = [
        html.unescape(t) for t in re.findall(r"<summary><code>(.*?)</code> \(full text\)</summary>", out)
    ]
    assert f"tool {TOOL}" in labels
    assert_inert(out, TOOL)
    assert [t.content for t in MD.parse(out) if t.type == "inline"][-1].startswith("_Made from the JSON")


def test_every_name_and_text_of_the_review_stays_inert(hostile: Path) -> None:
    """Thread ids, the root's folder, the namespace of a subgraph under a hostile node, node
    and channel names, interrupt and resume values, message text, store namespace, key and
    fields, a problem's path and another file's name: all shown, none live."""
    out = run(hostile, "review", "HEAD~1..HEAD", "--markdown", code=1)
    assert "Validation problems" in out and "not part of the layout" in out
    assert_inert(
        out,
        THREAD,
        f"{THREAD} ask",
        f"{THREAD} sub",
        FOLDER,
        CHANNEL,
        f"interrupt at {NODE}",
        TOOL,
        NODE,
        STRAY,
    )
    assert as_shown(NODE) in shown(out).splitlines()  # the subgraph call, named by its node


@pytest.mark.parametrize("thread", [THREAD, f"{THREAD} ask", f"{THREAD} waits"])
def test_render_keeps_every_name_inert_in_its_tables_and_headings(hostile: Path, thread: str) -> None:
    """``render``: the title, the status (waiting at NODE), the state's channels, who is
    asked, the next tasks and the history's "written by" column, where a node name starting
    with ``(`` passed through as the program's own ``(input)``: every cell one cell."""
    out = run(hostile, "render", thread)
    names = [thread, NODE] if thread != THREAD else [thread, TOOL]
    assert_inert(out, *names)


def test_render_of_a_namespace_under_a_hostile_node_is_inert(hostile: Path) -> None:
    (ns,) = [n for n in Reader(hostile / FOLDER / ".langgraph").namespaces(f"{THREAD} sub") if n]
    assert ns.startswith(f"{NODE}:")
    assert_inert(run(hostile, "render", f"{THREAD} sub", "--ns", ns), ns, NODE)


# ----------------------------------------------------------------------------
# a corpus of hostile texts, through real runs: hypothesis
# ----------------------------------------------------------------------------
#: pieces of Markdown, HTML and GitHub syntax, and characters the screen escapes
PIECES = [
    *"<>/&\"'`*_~[]()!#@|\\:=-.+ \n\t\r",
    *(
        "</",
        "/>",
        "<!--",
        "-->",
        "<![CDATA[",
        "&lt;",
        "&#60;",
        "&amp;",
        "``",
        "```",
        "~~~",
        "**",
        "- ",
        "1. ",
    ),
    *("](", "![", "<img src=x>", "<details>", "</details>", "<summary>", "</summary>", "<code>", "</code>"),
    *("<script>", "<a href=//e.vil>", "</td><td>", "<h2>", "https://e.vil/x", "//e.vil", "www.e.vil"),
    *("javascript:", "@octocat", "#1", "GH-1", "deadbeefcafe", ":+1:", ":100:", "(input)", "\x1b[2J"),
    *("\u2028", "\u202e", "\x00", "\x7f", "\x85", "é", "\U0001f600"),
]
TEXT = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=3)), min_size=1, max_size=12).map("".join)
NAME = TEXT.filter(lambda s: bool(s.strip()))


@pytest.fixture(scope="module")
def corpus_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = init_repo(tmp_path_factory.mktemp("corpus") / "repo")
    (repo / "README.md").write_text("app\n", encoding="utf-8")
    commit_all(repo, "start")
    return repo


@settings(
    max_examples=examples(4),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    tool=NAME.filter(lambda s: "\x00" not in s),  # a tool's args model is named after it
    thread=NAME.filter(lambda s: s.isprintable()),
    text=TEXT,
    key=NAME,
    label=NAME.filter(lambda s: "\x00" not in s and s.replace(".", "")),
)
def test_hostile_texts_from_a_real_run_stay_inert_in_review_and_render(
    corpus_repo: Path, tool: str, thread: str, text: str, key: str, label: str
) -> None:
    """Any text as a tool's name, a thread id, what the user, the model and the tool say
    (folded: over 160 characters), a store namespace, key and field, from a real
    ``create_agent`` run and a store put, committed: review --markdown and render show each
    name and keep all of it inert."""
    repo, root = corpus_repo, corpus_repo / ".langgraph"
    thread = f"t {thread}"  # never an option's "-" first
    long = (text + " ") * (170 // (len(text) + 1) + 1)
    agent_turn(root, thread, tool, long)
    RepoStore(root).put(("n", label.replace(".", "")), key, {key: long, "short": text})
    commit_all(repo, "hostile run")
    try:
        review = cli(root, "review", "HEAD~1..HEAD", "--markdown", cwd=repo)
        assert review.returncode == 0, review.stderr
        assert_inert(review.stdout, thread, tool, f"tool {tool}", key)
        render = cli(root, "render", thread, cwd=repo)
        assert render.returncode == 0, render.stderr
        assert_inert(render.stdout, thread)
    finally:
        git(repo, "reset", "-q", "--hard", "HEAD~1")


# ----------------------------------------------------------------------------
# a review that fails loudly: any shape validate accepts, review renders
# ----------------------------------------------------------------------------
def _nodes(tree: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    yield path, tree
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _nodes(value, (*path, key))
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            yield from _nodes(value, (*path, i))


def reseal(tdir: Path) -> None:
    """Name every object of the files below ``tdir`` by its content again, as a pull request
    that edits an object must (objects are named by their sha256, core/format/objects.py), and point
    each reference to a renamed object at its new name: a reference without ``$in`` in the
    file that holds the object, one with ``$in`` (and ``$ns``) naming that checkpoint anywhere."""
    docs = {p: json.loads(p.read_bytes()) for p in sorted(tdir.rglob("*.json"))}
    renamed = True
    while renamed:  # a renamed object changes the objects that refer to it: again until none
        renamed = False
        for path, doc in docs.items():
            held = doc.get("objects") if isinstance(doc, dict) else None
            for name in list(held) if isinstance(held, dict) else []:
                if names_object(name, held[name]):
                    continue
                new = object_digest(held[name])[: len(name)]
                held[new] = held.pop(name)
                here = (doc.get("checkpoint_id"), doc.get("checkpoint_ns", ""))
                for other, tree in docs.items():
                    for _, node in _nodes(tree):
                        if not isinstance(node, dict) or node.get("$ref") != name:
                            continue
                        if ("$in" in node and (node["$in"], node.get("$ns", "")) == here) or (
                            "$in" not in node and other == path
                        ):
                            node["$ref"] = new
                renamed = True
    for path, doc in docs.items():
        data = dump_json(doc)
        if path.read_bytes() != data:
            path.write_bytes(data)


def is_message(tree: Any) -> bool:
    kind = tree.get("$type") if isinstance(tree, dict) else None
    return isinstance(kind, list) and len(kind) == 2 and str(kind[0]).startswith("langchain_core.messages")


def free_places(doc: Any) -> dict[str, list[tuple[Any, ...]]]:
    """Where a file holds what validate does not type, by kind: a stored message's fields
    (each also where it is absent: ``+key``), a channel's or a write's value (not the tags and
    references the format puts in it), the metadata's own keys (and new ones), a store item's
    value, and the bookkeeping the schema types loosely (the time, the versions)."""
    out: dict[str, list[tuple[Any, ...]]] = {
        "message": [],
        "value": [],
        "metadata": [],
        "store": [],
        "bookkeeping": [],
    }
    for path, node in _nodes(doc):
        if is_message(node):
            fields = node.get("$fields")
            if isinstance(fields, dict):
                keys = [*fields, *(f"+{k}" for k in ADDED_KEYS if k not in fields)]
                out["message"] += [(*path, "$fields", k) for k in keys]
                calls = (*path, "$fields", "tool_calls")  # and inside the calls, which readers take apart
                out["message"] += [
                    p for p, _ in _nodes(fields.get("tool_calls"), calls) if len(p) > len(calls)
                ]
        elif path[:1] == ("value",):
            out["store"].append(path)
        elif path[:2] == ("checkpoint", "ts") or (
            path[:2] in (("checkpoint", "channel_versions"), ("checkpoint", "versions_seen"))
            and len(path) >= 3
        ):
            out["bookkeeping"].append(path)  # typed loosely: a version is a string or a number
        elif "json" in path and any(p in path for p in ("new_values", "writes", "parent_writes")):
            parent = _at(doc, path[:-1])
            tagged = isinstance(parent, dict) and any(str(k).startswith("$") for k in parent)
            if path[-1] != "json" and not tagged and not (isinstance(node, dict) and "$ref" in node):
                out["value"].append(path)
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    if isinstance(meta, dict):
        own = [k for k in meta if k not in ("step", "source", "parents")]
        out["metadata"] = [("metadata", k) for k in own] + [("metadata", f"+{k}") for k in ADDED_KEYS]
    return {kind: places for kind, places in out.items() if places}


def _current(file: Path, place: tuple[Any, ...]) -> Any:
    """What the file holds at ``place`` (None where a ``+key`` is not there yet)."""
    *parents, last = place
    node = _at(json.loads(file.read_bytes()), tuple(parents))
    return None if isinstance(last, str) and last.startswith("+") else node[last]


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


#: keys a mutation adds: a message's own (LangChain reads them), LangGraph's and ours
ADDED_KEYS = (
    "tool_calls",
    "content",
    "type",
    "name",
    "id",
    "tool_call_id",
    "status",
    "langgraph_repo_choice",
)

#: JSON shaped like what the files hold: tags, references, calls, content blocks
SHAPED = st.sampled_from(
    [
        {"$type": ["langchain_core.messages.human", "HumanMessage"], "$fields": {"content": 5}},
        {"$type": 5},
        {"$ref": "0" * 16},
        [{"name": 5, "args": 5}],
        [{"type": "text", "text": 5}, {"type": 7}, 5],
        {"chose": 5, "over": 5, "merged": 5},
        {"$kwargs": 5},
        {"$kwargs": {"value": [5], "id": 5}},
    ]
)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
    | SHAPED,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(TEXT | st.sampled_from(ADDED_KEYS), inner, max_size=3)
    ),
    max_leaves=6,
)
#: one value of each JSON type
OF_EACH_TYPE = (5, 2.5, True, "x", None, [5], {"a": 5})


def values_for(current: Any) -> st.SearchStrategy[Any]:
    """A value of another type than ``current``, half the time (a number where a reader takes
    a list apart, a list where it reads text): what a reader assuming a field's type trips
    on; else any JSON."""
    other = [v for v in OF_EACH_TYPE if type(v) is not type(current)]
    return st.one_of(st.sampled_from(other), JSON)


def mutate(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    *parents, last = path
    node = doc
    for step in parents:
        node = node[step]
    if isinstance(last, str) and last.startswith("+"):
        node[last[1:]] = value
    else:
        node[last] = value


@pytest.fixture(scope="module")
def accepted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """main: the agent's first turn; HEAD: its second turn, a graph's interrupt answered
    (thread ``ask``), and a store item. Every file validates."""
    repo = init_repo(tmp_path_factory.mktemp("accepted") / "repo")
    root = repo / ".langgraph"
    build_create_agent(RepoSaver(root, durable=False)).invoke(
        {"messages": [user_message(1)]}, cfg("support-1")
    )
    commit_all(repo, "turn 1")
    build_create_agent(RepoSaver(root, durable=False)).invoke(
        {"messages": [user_message(2)]}, cfg("support-1")
    )
    ask_graph(RepoSaver(root, durable=False)).invoke({}, cfg("ask"))
    ask_graph(RepoSaver(root, durable=False)).invoke(Command(resume="Ada"), cfg("ask"))
    RepoStore(root).put(
        ("memories", "u1"), "policy", {"text": "refunds over 100 need approval", "tags": ["a"]}
    )
    commit_all(repo, "turn 2")
    git(repo, "tag", "turn-2")  # each test's forgeries are undone back to it
    assert cli(root, "validate", cwd=repo).returncode == 0
    return repo


def changed_files(repo: Path) -> list[str]:
    names = git(repo, "diff", "--name-only", "HEAD~1", "HEAD").stdout.split()
    return sorted(n for n in names if n.endswith(".json"))


def commands_for(path: str) -> list[list[str]]:
    """review (each form) and, for a thread's file, render and show of the thread."""
    out = [
        ["review", "HEAD~2..HEAD", "--markdown"],
        ["review", "HEAD~2..HEAD", "--json"],
        ["review", "HEAD~2..HEAD"],
    ]
    parts = path.split("/")
    if parts[1] == "threads":
        thread = decode_segment(parts[2])
        out += [["render", thread], ["show", thread]]
    return out


def forge(repo: Path, path: str, change: Any) -> None:
    """A hand edit of the file at ``path``, with the objects of its thread named again."""
    file = repo / path
    doc = json.loads(file.read_bytes())
    change(doc)
    file.write_bytes(dump_json(doc))
    parts = path.split("/")
    if parts[1] == "threads":
        reseal(repo / "/".join(parts[:3]))


def commit_forged(repo: Path) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", "forged")  # the same value again: no change


def check_commands(repo: Path, *paths: str) -> tuple[int, list[str]]:
    """validate's exit code and, for every command, what went wrong: an unexpected error
    always, any exit but 0 when validate accepted the files (review's Markdown also inert)."""
    from langgraph_checkpoint_repo.cli.exits import INTERNAL

    root = repo / ".langgraph"
    valid = cli(root, "validate", cwd=repo).returncode
    wrong = []
    commands = {tuple(args): args for path in paths for args in commands_for(path)}
    for args in commands.values():
        proc = cli(root, *args, cwd=repo)
        if proc.returncode == INTERNAL or "Traceback" in proc.stderr:
            wrong.append(f"{args}: unexpected error (exit {proc.returncode}): {proc.stderr[-1500:]}")
        elif valid == 0 and proc.returncode != 0:
            wrong.append(f"{args}: exit {proc.returncode} on files validate accepts: {proc.stderr[-1500:]}")
        elif valid == 0 and "--markdown" in args:
            wrong += [f"{args}: {p}" for p in markdown_problems(proc.stdout)]
    return valid, wrong


def _user_message_2(doc: dict[str, Any]) -> dict[str, Any]:
    (message,) = [
        t
        for t in doc.get("objects", {}).values()
        if is_message(t) and "turn-2" in str(t["$fields"].get("content"))
    ]
    return message


def _tool_calls_5(doc: dict[str, Any]) -> None:
    _user_message_2(doc)["$fields"]["tool_calls"] = 5


def _choice_over_5(doc: dict[str, Any]) -> None:
    doc["metadata"]["source"] = "fork"
    doc["metadata"]["langgraph_repo_choice"] = {"chose": doc["parent_checkpoint_id"], "over": 5, "merged": 5}


@pytest.mark.parametrize(
    ("change", "shown"),
    [
        pytest.param(
            _tool_calls_5, "refused message: HumanMessage tool_calls", id="tool_calls-5-on-a-user-message"
        ),
        pytest.param(_choice_over_5, "merge: continues", id="a-merge-over-5"),
    ],
)
def test_a_field_of_another_type_that_validate_accepts_is_shown_not_raised(
    accepted: Path, change: Any, shown: str
) -> None:
    """The issue's case, ``tool_calls: 5`` on the user's message of turn 2, and a recorded
    choice whose ``over`` and ``merged`` are 5 on the newest checkpoint (made a fork): validate
    accepts both, and review, render and show raised (a traceback and exit 1, "problems found"
    to CI). Now each renders them, the odd field shown as it is."""
    repo = accepted
    if change is _tool_calls_5:
        (path,) = [p for p in changed_files(repo) if _holds_user_message_2(repo / p)]
    else:
        path = max(p for p in changed_files(repo) if "/support-1/checkpoints/" in p)
    try:
        forge(repo, path, change)
        commit_forged(repo)
        valid, wrong = check_commands(repo, path)
        # a user message with tool calls is one LangChain's tools see: validate refuses it now
        # (core/format/messages.py); what matters here is that every view still renders it
        assert valid == (1 if change is _tool_calls_5 else 0) and not wrong, "\n".join(wrong)
        out = cli(repo / ".langgraph", "review", "HEAD~2..HEAD", cwd=repo).stdout
        assert shown in out, out
    finally:
        git(repo, "reset", "-q", "--hard", "turn-2")


def _holds_user_message_2(file: Path) -> bool:
    try:
        _user_message_2(json.loads(file.read_bytes()))
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("where", ["metadata", "channel"])
def test_a_tag_no_reader_can_read_is_refused_by_validate(accepted: Path, where: str) -> None:
    """``{"$kwargs": …}`` without ``$type`` (a tag's part without the tag) in the metadata or
    in a channel's value: validate accepted it, then show and render of the thread failed
    (exit 4: "unknown tag") and so does the app's read. Validate now refuses it, naming the
    file and the pointer; no command fails unexpectedly."""
    repo = accepted
    path = max(p for p in changed_files(repo) if "/ask/checkpoints/" in p)

    def change(doc: dict[str, Any]) -> None:
        if where == "metadata":
            doc["metadata"]["note"] = {"$kwargs": {"value": 5}}
        else:
            (body,) = [b for b in doc["new_values"].values() if "json" in b.get("value", {})][:1]
            body["value"]["json"] = {"$kwargs": {"value": 5}}

    try:
        forge(repo, path, change)
        commit_forged(repo)
        valid, wrong = check_commands(repo, path)
        assert not wrong, "\n".join(wrong)
        proc = cli(repo / ".langgraph", "validate", cwd=repo)
        assert valid == 1 and Path(path).name in proc.stdout and "$kwargs" not in proc.stdout.split(":", 1)[0]
    finally:
        git(repo, "reset", "-q", "--hard", "turn-2")


def test_a_store_item_validate_refuses_is_in_the_review_with_its_problems(accepted: Path) -> None:
    """RepoStore redacts values, not keys: an item whose key looks like an API key is written,
    and validate refuses it. The review listed it among "other files" with exit 0, its
    problem dropped; now it is a store item, refused, with the problem, what the store would
    load, and exit 1."""
    repo, root = accepted, accepted / ".langgraph"
    key = "sk-ant-" + "a" * 30
    try:
        RepoStore(root).put(("memories", "u1"), key, {"text": "x"})
        commit_all(repo, "an item with a key like a secret")
        assert cli(root, "validate", cwd=repo).returncode == 1
        proc = cli(root, "review", "HEAD~1..HEAD", "--markdown", cwd=repo)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert (
            "(added, refused by validate)" in proc.stdout and "looks like an Anthropic API key" in proc.stdout
        )
        assert "`/value/text`: `null` → `x`" in proc.stdout and "none flagged" not in proc.stdout
        assert "store/" not in proc.stdout.partition("Other files changed")[2]
        assert key not in proc.stdout
    finally:
        git(repo, "reset", "-q", "--hard", "turn-2")


@settings(
    max_examples=examples(5),
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)
@given(data=st.data())
def test_no_shape_validate_accepts_makes_review_render_or_show_fail(
    accepted: Path, data: st.DataObject
) -> None:
    """A pull request changes, in files the head commit added, one to four values validate does
    not type (a message's field, a channel's or a write's value, the metadata, a store value),
    or adds such a key, re-hashing what must be; when validate accepts the result, review in
    each form, render and show exit 0 (review's Markdown inert); whatever validate says, none
    ends in an unexpected error."""
    repo = accepted
    paths = []
    try:
        for _ in range(data.draw(st.integers(1, 4), label="changes")):
            # a file with somewhere to change (a step's own writes file, which a put_writes whose
            # ride waited in vain on a loaded machine writes, may have nowhere)
            with_places = {p: _places(repo / p) for p in changed_files(repo)}
            path = data.draw(
                st.sampled_from(sorted(p for p, where in with_places.items() if where)), label="file"
            )
            places = with_places[path]
            kinds = [k for k in sorted(places) for _ in range(3 if k == "message" else 1)]
            kind = data.draw(st.sampled_from(kinds), label="kind")  # messages, what readers most take apart
            place = data.draw(st.sampled_from(places[kind]), label="place")
            value = data.draw(values_for(_current(repo / path, place)), label="value")
            forge(repo, path, lambda d, place=place, value=value: mutate(d, place, value))
            paths.append(path)
        commit_forged(repo)
        _, wrong = check_commands(repo, *paths)
        assert not wrong, "\n".join(wrong)
    finally:
        git(repo, "reset", "-q", "--hard", "turn-2")


def _places(path: Path) -> dict[str, Any]:
    """``free_places`` of a file, without the kinds it has no place of."""
    return {kind: where for kind, where in free_places(json.loads(path.read_bytes())).items() if where}


def test_an_unexpected_error_is_exit_7_and_one_line_never_a_traceback(accepted: Path) -> None:
    """A bug (here: review's report raises a RuntimeError, as ``tool_calls: 5`` made it raise
    a TypeError) is exit 7 and one line naming the error and where it was raised, in a real
    process: never exit 1 with a traceback, which CI reads as "problems found"."""
    bug = (
        "import sys, langgraph_checkpoint_repo.review.report as r\n"
        "def broken(*a, **k): raise RuntimeError('a bug')\n"
        "r.review = broken\n"
        "from langgraph_checkpoint_repo.cli import main\n"
        "sys.argv[0] = 'langgraph-repo'\n"
        "main()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", bug, "--root", ".langgraph", "review", "HEAD~1..HEAD", "--markdown"],
        cwd=accepted,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 7 and proc.stdout == "", proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "unexpected RuntimeError at" in proc.stderr and "a bug" in proc.stderr
