"""Terminals, Markdown, secrets, locks and Windows names: what the files and the command line
hand to a person or another system is inert, masked and checkout-safe.

Real graphs run through the real RepoSaver on tmp_path; the command line runs as a
subprocess, as a person or a hook runs it. Every secret is made up and assembled at run
time, so this file holds none verbatim.
"""

from __future__ import annotations

import base64
import json
import os
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.types import interrupt
from markdown_it import MarkdownIt
from pydantic import BaseModel, SecretBytes, SecretStr
from typing_extensions import TypedDict

from graphs import cfg, chat_graph, line_graph
from helpers import checkpoint_files, cli, cli_process, dump, examples, load
from langgraph_checkpoint_repo import FileFormatError, RepoCheckpointError, RepoSaver, UnrevivableValueError
from langgraph_checkpoint_repo.core.layout import Layout, decode_segment, encode_segment

# ----------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------
# ESC colour, an OSC 8 hyperlink ended by BEL, a C1 CSI (clear screen) and a right-to-left override
HOSTILE_TEXT = "hi \x1b[31mred\x1b]8;;https://evil.example\x07link\x1b]8;;\x07 \x9b2J \u202egnp.exe"


def control_chars(text: str, allowed: str = "\n") -> list[str]:
    """Every character in ``text`` that a terminal or a renderer would act on."""
    return [
        c
        for c in text
        if (ord(c) < 0x20 and c not in allowed)
        or 0x7F <= ord(c) < 0xA0
        or 0x202A <= ord(c) <= 0x202E
        or 0x2066 <= ord(c) <= 0x2069
    ]


class NoteState(TypedDict, total=False):
    note: str


def note_graph(saver: RepoSaver) -> Any:
    return line_graph(NoteState, saver, write=lambda state: {"note": "written"})


def plant_type(root: Path, thread_id: str, module: str, name: str) -> Path:
    """Replace the stored ``note`` with a constructor of a type the allowlist refuses."""
    for path in checkpoint_files(root, thread_id):
        doc = load(path)
        if "note" in doc.get("new_values", {}):
            planted = {"$type": [module, name], "$arg": 1}
            doc["new_values"]["note"]["value"] = {"serde": "msgpack", "json": planted}
            dump(path, doc, sort_keys=False)
            return path
    raise AssertionError("no checkpoint holds the note")


_R = "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3iJk6lMn9oPq2rSt5u"  # made-up key material
OPENAI_KEY = "sk-" + "proj-" + _R[:48]


# ----------------------------------------------------------------------
# terminals: nothing printed acts on the terminal
# ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def hostile_chat(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two turns of a chat whose messages carry escape sequences."""
    root = tmp_path_factory.mktemp("hostile-chat")
    graph = chat_graph(RepoSaver(root, durable=False))
    graph.invoke({"messages": [HumanMessage(content=HOSTILE_TEXT)]}, cfg("t"))
    graph.invoke({"messages": [HumanMessage(content="again " + HOSTILE_TEXT)]}, cfg("t"))
    return root


def test_show_prints_escape_sequences_in_message_text_as_visible_escapes(hostile_chat: Path) -> None:
    proc = cli(hostile_chat, "show", "t")
    assert proc.returncode == 0, proc.stderr
    assert control_chars(proc.stdout + proc.stderr) == []
    assert "\\x1b[31mred" in proc.stdout and "\\x9b2J" in proc.stdout and "\\u202egnp.exe" in proc.stdout


def test_diff_prints_escape_sequences_in_message_text_as_visible_escapes(hostile_chat: Path) -> None:
    proc = cli(hostile_chat, "diff", "t")
    assert proc.returncode == 0, proc.stderr
    assert control_chars(proc.stdout + proc.stderr) == []
    assert "\\x1b[31mred" in proc.stdout and "\\x9b2J" in proc.stdout


def test_json_output_escapes_c1_and_bidi_controls_and_reads_back_the_same(hostile_chat: Path) -> None:
    proc = cli(hostile_chat, "show", "t", "--json")
    assert proc.returncode == 0, proc.stderr
    assert control_chars(proc.stdout) == []
    first = json.loads(proc.stdout)["values"]["messages"][0]["$fields"]["content"]
    assert first == HOSTILE_TEXT  # the escapes are JSON escapes: the value is unchanged


def test_not_revived_reason_escapes_a_tampered_type_name(tmp_path: Path) -> None:
    note_graph(RepoSaver(tmp_path, durable=False)).invoke({}, cfg("t"))
    plant_type(tmp_path, "t", "evil\x1b[2J", "Pwn\x1b]0;owned\x07\x9b")
    proc = cli(tmp_path, "show", "t")
    assert proc.returncode == 0, proc.stderr
    assert "not revived" in proc.stdout
    assert control_chars(proc.stdout + proc.stderr) == []
    assert "evil\\x1b[2J" in proc.stdout
    as_json = cli(tmp_path, "show", "t", "--json")
    assert control_chars(as_json.stdout) == []


def test_saver_error_message_escapes_control_characters_of_a_tampered_type_name(tmp_path: Path) -> None:
    saver = RepoSaver(tmp_path, durable=False)
    note_graph(saver).invoke({}, cfg("t"))
    plant_type(tmp_path, "t", "evil\x1b[2J", "Pwn\x9b31m")
    with pytest.raises(UnrevivableValueError) as info:
        note_graph(RepoSaver(tmp_path, durable=False)).get_state(cfg("t"))
    message = str(info.value)
    assert control_chars(message) == []
    assert "evil\\x1b[2J.Pwn\\x9b31m" in message


def test_threads_and_history_escape_control_characters_in_a_thread_id(tmp_path: Path) -> None:
    thread_id = "t\x1b[31m\x9b2J"
    note_graph(RepoSaver(tmp_path, durable=False)).invoke({}, cfg(thread_id))
    threads = cli(tmp_path, "threads")
    assert threads.returncode == 0, threads.stderr
    assert control_chars(threads.stdout + threads.stderr) == []
    assert "t\\x1b[31m\\x9b2J" in threads.stdout
    history = cli(tmp_path, "history", thread_id)
    assert history.returncode == 0, history.stderr
    assert control_chars(history.stdout + history.stderr) == []
    assert "thread t\\x1b[31m\\x9b2J" in history.stdout
    listed = json.loads(cli(tmp_path, "threads", "--json").stdout)
    assert [s["thread_id"] for s in listed] == [thread_id]  # JSON keeps the id exactly


def test_cli_error_escapes_control_characters_in_a_file_name(tmp_path: Path) -> None:
    note_graph(RepoSaver(tmp_path, durable=False)).invoke({}, cfg("t"))
    (tmp_path / "threads" / "stray\x1b[2J\x9b").mkdir()  # not a name the layout writes
    proc = cli(tmp_path, "threads")
    assert proc.returncode == 4, proc.stderr
    assert control_chars(proc.stdout + proc.stderr) == []
    assert "stray\\x1b[2J\\x9b" in proc.stderr


def test_progress_label_markup_from_a_thread_id_is_not_interpreted(tmp_path: Path) -> None:
    """A thread id from another saver is shown in the import progress bar as text: rich
    markup in it makes no hyperlink (OSC 8) and no style."""
    source = tmp_path / "source.db"
    thread_id = "[link=https://evil.example]click[/link][blink]x[/blink]"
    with sqlite3.connect(source, check_same_thread=False) as conn:
        chat_graph(SqliteSaver(conn)).invoke({"messages": [HumanMessage(content="hi")]}, cfg(thread_id))
    terminal = {"TTY_COMPATIBLE": "1", "COLUMNS": "200"}  # rich draws progress bars as on a terminal
    proc = cli_process(tmp_path / "repo", "import", f"sqlite:///{source}", env=terminal)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b]8;" not in proc.stderr  # no hyperlink escape
    assert "[link=https://evil.example]click[/link]" in proc.stderr  # the label, as text


# ----------------------------------------------------------------------
# Markdown: render's page shows file-derived strings, never runs them
# ----------------------------------------------------------------------
def markdown_html(md: str) -> str:
    """The page as GitHub-flavoured Markdown renders it: CommonMark, raw HTML on, tables."""
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(md)


def test_render_passes_no_control_characters(hostile_chat: Path) -> None:
    proc = cli(hostile_chat, "render", "t")
    assert proc.returncode == 0, proc.stderr
    assert control_chars(proc.stdout) == []
    assert "\\x07" in proc.stdout and "\\x1b[31mred" in proc.stdout


def test_render_thread_id_cannot_break_out_of_its_code_span(tmp_path: Path) -> None:
    thread_id = "x` <img src=https://evil.example/p.png> ``y"
    note_graph(RepoSaver(tmp_path, durable=False)).invoke({}, cfg(thread_id))
    proc = cli(tmp_path, "render", thread_id)
    assert proc.returncode == 0, proc.stderr
    html = markdown_html(proc.stdout)
    assert "<img" not in html
    heading = re.search(r"<h1>Thread <code>(.*?)</code></h1>", html)
    assert heading is not None, html
    assert heading.group(1) == "x` &lt;img src=https://evil.example/p.png&gt; ``y"


def history_rows(html: str) -> list[list[str]]:
    table = html.split("<h2>History</h2>", 1)[1]
    body = table.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [re.findall(r"<td>(.*?)</td>", row, re.S) for row in body.split("</tr>") if "<td>" in row]


def test_render_tampered_source_adds_no_table_cells(tmp_path: Path) -> None:
    note_graph(RepoSaver(tmp_path, durable=False)).invoke({}, cfg("t"))
    latest = checkpoint_files(tmp_path, "t")[-1]
    doc = load(latest)
    source = "loop | <b>injected</b> | `x` \\| y | @admin #1"
    doc["metadata"]["source"] = source
    dump(latest, doc, sort_keys=False)
    proc = cli(tmp_path, "render", "t")
    assert proc.returncode == 0, proc.stderr
    html = markdown_html(proc.stdout)
    assert "<b>" not in html
    rows = history_rows(html)
    assert rows and all(len(row) == 5 for row in rows), rows
    tampered = rows[0][1]
    assert tampered.startswith("<code>") and "&lt;b&gt;injected&lt;/b&gt;" in tampered
    assert "| `x` \\x5c| y | @admin #1" in tampered  # the backslash before a pipe shown as \x5c
    assert "<b>" not in html.split("<h2>State</h2>", 1)[0]  # nor in the summary table


def test_render_channel_and_node_names_stay_inert(tmp_path: Path) -> None:
    channel = "a*b* <i>c</i> [x](https://evil.example)"
    node = "ask`` <img src=x> ``"
    state = TypedDict("state", {channel: str}, total=False)  # type: ignore[misc]

    def ask(values: Any) -> dict[str, Any]:
        return {channel: str(interrupt("name?"))}

    graph = line_graph(
        state, RepoSaver(tmp_path, durable=False), prep=lambda values: {channel: "ready"}, **{node: ask}
    )
    graph.invoke({}, cfg("t"))
    proc = cli(tmp_path, "render", "t")
    assert proc.returncode == 0, proc.stderr
    html = markdown_html(proc.stdout)
    assert "<img" not in html and "<i>" not in html and "<a " not in html
    assert html.count("<em>") == 1  # the page's own footer only
    assert "<strong><code>a*b* &lt;i&gt;c&lt;/i&gt; [x](https://evil.example)</code></strong>" in html
    assert html.count("<code>ask`` &lt;img src=x&gt; ``</code>") >= 3  # status, question, tasks


# ----------------------------------------------------------------------
# secrets: pydantic secrets stay out of the files, keys out of every message
# ----------------------------------------------------------------------
SECRET_TEXT = "hunter2-" + _R[5:17]  # made up; matches no default pattern
SECRET_BYTES = b"raw-" + _R[20:30].encode()
MARKER = "[REDACTED:pydantic-secret]"


class Login(BaseModel):
    user: str
    password: SecretStr


class VaultState(TypedDict, total=False):
    api_key: SecretStr
    blob: SecretBytes
    login: Login
    extra: dict[str, Any]


def vault_graph(saver: RepoSaver) -> Any:
    def store(state: VaultState) -> dict[str, Any]:
        return {
            "api_key": SecretStr(SECRET_TEXT),
            "blob": SecretBytes(SECRET_BYTES),
            "login": Login(user="ada", password=SecretStr(SECRET_TEXT + "-login")),
            "extra": {"nested": [SecretStr(SECRET_TEXT + "-nested")]},
        }

    return line_graph(VaultState, saver, store=store)


def all_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())


# LangGraph does not register pydantic's secret types as state types: allow them to read back
SECRET_TYPES = [("pydantic.types", "SecretStr"), ("pydantic.types", "SecretBytes")]


def test_secretstr_and_secretbytes_are_redacted_by_default_also_nested(tmp_path: Path) -> None:
    graph = vault_graph(RepoSaver(tmp_path, durable=False))
    graph.invoke({}, cfg("t"))
    stored = all_bytes(tmp_path)
    assert SECRET_TEXT.encode() not in stored
    assert base64.b64encode(SECRET_BYTES) not in stored and SECRET_BYTES not in stored
    reader = RepoSaver(tmp_path, durable=False, allowlist=SECRET_TYPES)
    values = vault_graph(reader).get_state(cfg("t")).values
    assert isinstance(values["api_key"], SecretStr) and values["api_key"].get_secret_value() == MARKER
    assert isinstance(values["blob"], SecretBytes) and values["blob"].get_secret_value() == MARKER.encode()
    assert values["login"].user == "ada" and values["login"].password.get_secret_value() == MARKER
    assert values["extra"]["nested"][0].get_secret_value() == MARKER
    assert cli(tmp_path, "validate").returncode == 0


def test_validate_reports_a_clear_text_secretstr_without_printing_it(tmp_path: Path) -> None:
    vault_graph(RepoSaver(tmp_path, durable=False, redact=False)).invoke({}, cfg("t"))
    assert SECRET_TEXT.encode() in all_bytes(tmp_path)  # redact=False: stored as given
    proc = cli(tmp_path, "validate")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert SECRET_TEXT[:6] not in proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if "pydantic SecretStr" in line]
    pointers = {line.split(": ", 2)[1] for line in lines}
    assert "/new_values/api_key/value/json/$arg" in pointers
    assert "/new_values/blob/value/json/$arg" in pointers
    # the login model is an object, held by the checkpoint that introduced it (format 4)
    assert any(re.fullmatch(r"/objects/[0-9a-f]{16}/\$fields/password/\$arg", p) for p in pointers), pointers
    assert "/new_values/extra/value/json/nested/0/$arg" in pointers


def test_saver_error_masks_a_key_carried_in_the_thread_id(tmp_path: Path) -> None:
    thread_id = f"user:{OPENAI_KEY}"
    note_graph(RepoSaver(tmp_path, durable=False)).invoke({}, cfg(thread_id))
    plant_type(tmp_path, thread_id, "evil", "Pwn")
    with pytest.raises(UnrevivableValueError) as info:
        note_graph(RepoSaver(tmp_path, durable=False)).get_state(cfg(thread_id))
    message = str(info.value)
    assert "evil.Pwn" in message
    assert OPENAI_KEY[:12] not in message  # quoted as the id
    assert encode_segment(OPENAI_KEY)[:16] not in message  # nor as the path segment it encodes to
    assert "sk-p…" in message


def test_show_history_and_json_mask_a_key_in_state_and_thread_id(tmp_path: Path) -> None:
    thread_id = f"user:{OPENAI_KEY}"
    graph = chat_graph(RepoSaver(tmp_path, durable=False, redact=False))
    graph.invoke({"messages": [HumanMessage(content=f"my key is {OPENAI_KEY}")]}, cfg(thread_id))
    for args in (
        ("show", thread_id),
        ("history", thread_id),
        ("show", thread_id, "--json"),
        ("threads",),
        ("render", thread_id),
        ("delete", thread_id),  # the question it asks names the thread and its folder
    ):
        proc = cli(tmp_path, *args)
        assert proc.returncode == (5 if args[0] == "delete" else 0), (args, proc.stderr)
        out = proc.stdout + proc.stderr
        assert OPENAI_KEY[:12] not in out, args
        assert encode_segment(OPENAI_KEY)[:16] not in out, args
        assert "sk-p…" in out, args


def test_show_masks_a_key_that_folding_cuts(tmp_path: Path) -> None:
    """A long message is cut at 400 characters; a key across the cut is masked, not halved."""
    graph = chat_graph(RepoSaver(tmp_path, durable=False, redact=False))
    text = "x " * 190 + OPENAI_KEY + " and more"  # the key starts 20 characters before the cut
    graph.invoke({"messages": [HumanMessage(content=text)]}, cfg("t"))
    proc = cli(tmp_path, "show", "t")
    assert proc.returncode == 0, proc.stderr
    assert OPENAI_KEY[:12] not in proc.stdout
    assert "sk-p…" in proc.stdout


def test_validate_masks_a_path_whose_folder_decodes_to_a_key(tmp_path: Path) -> None:
    thread_id = f"user:{OPENAI_KEY}"
    note_graph(RepoSaver(tmp_path, durable=False)).invoke({}, cfg(thread_id))
    broken = checkpoint_files(tmp_path, thread_id)[-1]
    broken.write_text("{ not json", encoding="utf-8")
    for args in (("validate",), ("validate", "--json"), ("fsck",)):
        proc = cli(tmp_path, *args)
        out = proc.stdout + proc.stderr
        assert broken.name in out, (args, out)  # the file is still named...
        assert encode_segment(OPENAI_KEY)[:16] not in out, args  # ...its folder masked
        assert OPENAI_KEY[:12] not in out, args
        assert "user:sk-p…" in out, args


# ----------------------------------------------------------------------
# locks: a lock file is checked like every other path
# ----------------------------------------------------------------------
def test_lock_file_planted_as_symlink_is_refused_naming_it(tmp_path: Path, root: Path) -> None:
    note_graph(RepoSaver(root, durable=False)).invoke({}, cfg("t"))
    victim = tmp_path / "precious.txt"
    victim.write_text("do not truncate\n", encoding="utf-8")
    lock = Layout(root).lock_path("victim")
    os.symlink(victim, lock)
    with pytest.raises(RepoCheckpointError, match=r"lock file .*victim\.lock is a symlink"):
        note_graph(RepoSaver(root, durable=False, lock_timeout=2)).invoke({}, cfg("victim"))
    assert victim.read_text(encoding="utf-8") == "do not truncate\n"
    assert os.path.islink(lock)


def test_lock_file_planted_as_hard_link_is_refused_naming_it(tmp_path: Path) -> None:
    """filelock 3.x opens its lock file with O_TRUNC: a hard link would empty the file it shares."""
    note_graph(RepoSaver(tmp_path, durable=False)).invoke({}, cfg("t"))
    victim = tmp_path / "precious.txt"
    victim.write_text("do not truncate\n", encoding="utf-8")
    lock = Layout(tmp_path).lock_path("linked")
    os.link(victim, lock)
    with pytest.raises(RepoCheckpointError, match=r"lock file .*linked\.lock is a hard link"):
        note_graph(RepoSaver(tmp_path, durable=False, lock_timeout=2)).invoke({}, cfg("linked"))
    assert victim.read_text(encoding="utf-8") == "do not truncate\n"


def test_lock_file_planted_as_folder_is_refused_naming_it(tmp_path: Path) -> None:
    note_graph(RepoSaver(tmp_path, durable=False)).invoke({}, cfg("t"))
    lock = Layout(tmp_path).lock_path("odd")
    lock.mkdir()
    with pytest.raises(RepoCheckpointError, match=r"lock file .*odd\.lock is not a regular file"):
        note_graph(RepoSaver(tmp_path, durable=False, lock_timeout=2)).invoke({}, cfg("odd"))


def test_pyproject_requires_a_filelock_that_refuses_symlinks_itself() -> None:
    """filelock opens its lock file with O_NOFOLLOW from 3.20.1 (UnixFileLock) and 3.20.3
    (SoftFileLock); an older one truncates the target of a symlink planted at the name."""
    text = (Path(__file__).parent.parent / "pyproject.toml").read_text(encoding="utf-8")
    (spec,) = re.findall(r'^\s*"(filelock[^"]*)",?$', text, re.M)
    match = re.fullmatch(r"filelock>=(\d+)\.(\d+)(?:\.(\d+))?(?:,<\d+)?", spec)
    assert match is not None, spec
    assert tuple(int(x or 0) for x in match.groups()) >= (3, 20, 3), spec


# ----------------------------------------------------------------------
# Windows names: nothing the layout builds is a device name
# ----------------------------------------------------------------------
_DEVICE = re.compile(r"(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])", re.IGNORECASE)
DEVICE_IDS = [
    "con",
    "nul",
    "aux",
    "prn",
    "com1",
    "com0",
    "lpt9",
    "lpt0",
    "con.json",
    "CON",
    "Nul.txt",
    "aux.tar.gz",
    "com¹",
    "lpt³",
    "con.",
    "con ",
    "nul.tmp",
]


def windows_unsafe(name: str) -> bool:
    """A file or folder name Windows cannot create or gives another meaning."""
    base = name.split(".", 1)[0].rstrip(" ")
    return (
        bool(_DEVICE.fullmatch(base))
        or name.endswith((".", " "))
        or any(c in '<>:"/\\|?*' or ord(c) < 32 for c in name)
    )


def test_windows_device_names_never_become_a_file_or_folder_name(tmp_path: Path) -> None:
    saver = RepoSaver(tmp_path, durable=False)
    for thread_id in DEVICE_IDS:
        note_graph(saver).invoke({}, cfg(thread_id))
        for name in ("con", "lpt1.json"):  # a checkpoint id and a namespace of that kind too
            checkpoint = {**empty_checkpoint(), "id": name}
            config = cfg(thread_id, checkpoint_ns=name)
            saver.put(config, checkpoint, {"source": "input", "step": -1}, {})
            saver.put_writes(cfg(thread_id, checkpoint_ns=name, checkpoint_id=name), [("note", "x")], "task")
    names = [part for p in tmp_path.rglob("*") for part in p.relative_to(tmp_path).parts]
    assert names and not [n for n in names if windows_unsafe(n)]
    assert sorted(saver.store.thread_ids()) == sorted(DEVICE_IDS)
    for thread_id in DEVICE_IDS:
        state = note_graph(RepoSaver(tmp_path, durable=False)).get_state(cfg(thread_id))
        assert state.values == {"note": "written"}
        assert saver.get_tuple(cfg(thread_id, checkpoint_ns="con")) is not None


def earlier_encode(value: str) -> str:
    """``encode_segment`` as earlier versions wrote it (before device names were escaped)."""
    import hashlib
    import string

    safe = frozenset(string.ascii_lowercase + string.digits + "-_")
    if value == "":
        return "%"
    out: list[str] = []
    last = len(value) - 1
    for i, ch in enumerate(value):
        if ch in safe:
            out.append(ch)
        elif ch == "." and 0 < i < last:
            out.append(ch)
        elif "A" <= ch <= "Z":
            out.append("^" + ch.lower())
        else:
            out.extend(f"%{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))
    seg = "".join(out)
    if seg.endswith(".tmp"):
        seg = seg[:-4] + "%2etmp"
    if len(seg) > 120:
        return "~" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    return seg


DEVICE_LIKE = st.builds(
    lambda name, case, ext: (name.upper() if case else name) + ext,
    st.sampled_from(["con", "prn", "aux", "nul", *(f"{p}{d}" for p in ("com", "lpt") for d in range(10))]),
    st.booleans(),
    st.sampled_from(["", ".json", ".", " ", ".a.b", ".tmp", "x", "¹", ".py"]),
)
ANY_ID = st.one_of(
    DEVICE_LIKE, st.text(st.characters(exclude_categories=()), max_size=30), st.text(max_size=200)
)


@settings(max_examples=examples(400), deadline=None)
@given(ANY_ID, ANY_ID)
@example("con", "%63on")
@example("nul.json", "nul")
def test_device_name_encoding_is_reversible_injective_and_keeps_earlier_names(a: str, b: str) -> None:
    for value in (a, b):
        seg = encode_segment(value)
        assert not any(windows_unsafe(seg + suffix) for suffix in ("", ".json", ".lock", "~x.json"))
        if not seg.startswith("~"):
            assert decode_segment(seg) == value
        base = earlier_encode(value).split(".", 1)[0]
        earlier = earlier_encode(value)
        device = base in {"con", "prn", "aux", "nul"} or re.fullmatch(r"(com|lpt)[0-9]", base)
        if not device and not earlier.endswith(".py"):
            assert seg == earlier  # an existing root stays readable
        assert not seg.endswith(".py")
    if a != b:
        assert encode_segment(a) != encode_segment(b)
    # value files keep their names: a channel or version never starts a file name
    layout = Layout(Path("/r"))
    assert layout.value_rel(a, b) == f"values/{earlier_encode(a)}@{earlier_encode(b)}.json"


def test_device_name_folder_written_by_an_earlier_version_is_named_with_its_rename(tmp_path: Path) -> None:
    written = tmp_path / "written"
    note_graph(RepoSaver(written, durable=False)).invoke({}, cfg("con"))
    (written / "threads" / "%63on").rename(written / "threads" / "con")  # as earlier versions wrote it
    root = written.rename(tmp_path / "root")  # a root this process has not seen
    proc = cli(root, "threads")
    assert proc.returncode == 4
    assert "threads/con" in proc.stderr and "Windows device name" in proc.stderr
    assert "rename it to '%63on'" in proc.stderr
    # the saver neither reads an empty thread nor starts a second folder beside the old one
    saver = RepoSaver(root, durable=False)
    with pytest.raises(FileFormatError, match=r"threads/con: .*rename the folder to '%63on'"):
        saver.get_tuple(cfg("con"))
    with pytest.raises(FileFormatError, match="Windows device name"):
        note_graph(saver).invoke({}, cfg("con"))
    assert sorted(p.name for p in (root / "threads").iterdir()) == ["con"]


def test_no_folder_or_file_name_ends_in_py_so_a_dev_server_never_reloads(tmp_path: Path) -> None:
    """``langgraph dev`` restarts when a path ending in .py changes; a thread id or a subgraph
    node (its namespace when compiled with checkpointer=True) may end in .py."""
    inner = StateGraph(NoteState)
    inner.add_node("write", lambda s: {"note": "inner"})
    inner.add_edge(START, "write")
    outer = StateGraph(NoteState)
    outer.add_node("helper.py", inner.compile(checkpointer=True))
    outer.add_edge(START, "helper.py")
    graph = outer.compile(checkpointer=RepoSaver(tmp_path, durable=False))
    graph.invoke({"note": ""}, cfg("notes.py"))
    names = [p.name for p in tmp_path.rglob("*")]
    assert "notes%2epy" in names and "helper%2epy" in names
    assert not [n for n in names if n.endswith(".py")]
    fresh = outer.compile(checkpointer=RepoSaver(tmp_path, durable=False))
    assert fresh.get_state(cfg("notes.py")).values == {"note": "inner"}
    assert cli(tmp_path, "validate").returncode == 0


def test_a_py_folder_written_by_an_earlier_version_is_named_with_its_rename(tmp_path: Path) -> None:
    written = tmp_path / "written"
    note_graph(RepoSaver(written, durable=False)).invoke({}, cfg("notes.py"))
    (written / "threads" / "notes%2epy").rename(written / "threads" / "notes.py")
    root = written.rename(tmp_path / "root")  # a root this process has not seen
    proc = cli(root, "threads")
    assert proc.returncode == 4
    assert "rename it to 'notes%2epy'" in proc.stderr
    with pytest.raises(FileFormatError, match=r"threads/notes\.py: .*rename the folder to 'notes%2epy'"):
        RepoSaver(root, durable=False).get_tuple(cfg("notes.py"))
    assert sorted(p.name for p in (root / "threads").iterdir()) == ["notes.py"]
