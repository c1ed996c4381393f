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
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from markdown_it import MarkdownIt
from markdown_it.token import Token
from typing_extensions import TypedDict

from graphs import cfg
from helpers import cli
from langgraph_checkpoint_repo import RepoSaver, RepoStore
from langgraph_checkpoint_repo.cli.output import screen
from langgraph_checkpoint_repo.core.layout import Layout
from langgraph_checkpoint_repo.readmodel.reader import Reader
from test_git import commit_all, init_repo

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

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(f"{tag}{attrs}" if attrs else tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(f"{tag}/{attrs}")

    def handle_endtag(self, tag: str) -> None:
        self.tags.append(f"/{tag}")

    def handle_data(self, data: str) -> None:
        inside = self.tags[-2:] == ["details", "summary"] or not self.tags or self.tags[-1] != "code"
        (self.text if inside else self.code).append(data)

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
    fold's label), one item per line: where the data must be."""
    out: list[str] = []
    for tok in MD.parse(markdown):
        if tok.type == "fence":
            out.append(tok.content)
        elif tok.type == "html_block":
            parsed = _Html()
            parsed.feed(tok.content)
            out += parsed.code
        for child in tok.children or []:
            if child.type == "code_inline":
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


class ScriptedModel(BaseChatModel):
    """Calls the tool ``tool_name`` once with ``say`` as its argument, then answers ``say``."""

    tool_name: str
    say: str

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(
        self, tools: Any, *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(**kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if isinstance(messages[-1], ToolMessage):
            reply = AIMessage(content=f"answer {self.say}", id="ai-answer")
        else:
            call = {"name": self.tool_name, "args": {"q": self.say}, "id": "call-1"}
            reply = AIMessage(content=self.say, tool_calls=[call], id="ai-call")
        return ChatResult(generations=[ChatGeneration(message=reply)])


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
    assert "Validation problems" in out and "Other files changed" in out
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
    assert as_shown(f"{NODE}:") in shown(out)  # the subgraph's namespace


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
