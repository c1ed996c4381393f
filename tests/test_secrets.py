"""Secrets stay out of the files git commits: redaction on write, validate on read, encryption.

Every secret here is made up, and assembled at run time so this file holds none verbatim.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from graphs import BIG_TEXT, cfg, chat_graph, line_graph
from helpers import cli
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.checks import Validator
from langgraph_checkpoint_repo.core.errors import UnrevivableValueError
from langgraph_checkpoint_repo.core.redaction import DEFAULT_PATTERNS, Redactor, might_contain_secret

_R = "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3iJk6lMn9oPq2rSt5u"  # made-up key material

SECRETS: dict[str, str] = {
    "openai-key": "sk-" + "proj-" + _R[:48],
    "anthropic-key": "sk-" + "ant-api03-" + _R[:40],
    "aws-access-key-id": "AKIA" + "IOSFODNN7EXAMPLE",
    "github-token": "gh" + "p_" + _R[:36],
    "slack-token": "xo" + "xb-123456789012-1234567890123-" + _R[:24],
    "google-api-key": "AI" + "za" + _R[:35],
    "stripe-key": "sk" + "_live_" + _R[:24],
    "jwt": "ey" + "JhbGciOiJIUzI1NiJ9." + "ey" + "JzdWIiOiIxMjM0NTY3ODkwIn0." + _R[:43],
    "private-key": "-----BEGIN RSA "
    + "PRIVATE KEY-----\nMIIEowIBAAKCAQEA"
    + _R
    + "\n-----END RSA "
    + "PRIVATE KEY-----",
    "bearer-token": _R[:32],  # after "Bearer " in the text below
}
# the GitHub fine-grained form and the OpenAI legacy form, too
MORE = {
    "github-token": "github" + "_pat_11ABCDEFG0" + _R[:50],
    "openai-key": "sk-" + _R[:48],
}


def text_with(kind: str, secret: str) -> str:
    if kind == "bearer-token":
        return f"Authorization: Bearer {secret}"
    return f"here is the credential: {secret} (keep it safe)"


def files_containing(root: Path, needle: str) -> list[Path]:
    """Every file under the root whose bytes contain ``needle`` (or its first 12 characters)."""
    probes = {needle.encode(), needle[:12].encode()} if len(needle) >= 12 else {needle.encode()}
    return [p for p in root.rglob("*") if p.is_file() and any(n in p.read_bytes() for n in probes)]


def all_text(root: Path) -> str:
    return "".join(p.read_text("utf-8") for p in root.rglob("*.json"))


# ----------------------------------------------------------------------
# default redaction
# ----------------------------------------------------------------------
@pytest.mark.parametrize("kind", list(SECRETS))
def test_default_redaction_removes_each_pattern_from_messages_metadata_and_writes(
    tmp_path: Path, kind: str
) -> None:
    secret = SECRETS[kind]
    saver = RepoSaver(tmp_path / "state", durable=False)
    graph = chat_graph(saver)
    config = cfg("t")
    config["metadata"] = {"caller_token": text_with(kind, secret)}
    graph.invoke({"messages": [HumanMessage(content=text_with(kind, secret))]}, config)

    root = tmp_path / "state"
    assert files_containing(root, secret) == []
    # where the secret would have been: the checkpoint's metadata, and the messages (format 4:
    # each stored once, in the objects of the checkpoint that introduced it: the user's and the
    # echo the "reply" node wrote)
    marker = f"[REDACTED:{kind}]"
    checkpoints = [p.read_text() for p in (root / "threads/t/checkpoints").iterdir()]
    objects = [json.dumps(json.loads(t).get("objects", {}), ensure_ascii=False) for t in checkpoints]
    assert any(marker in t and '"caller_token"' in t for t in checkpoints)
    assert any(f"echo: {text_with(kind, marker)}"[:40] in t for t in objects)
    assert any(text_with(kind, marker)[:40] in t and "echo: " not in t for t in objects)
    state = graph.get_state(cfg("t")).values["messages"]
    assert [m.content for m in state] == [text_with(kind, marker), "echo: " + text_with(kind, marker)]
    assert graph.get_state(cfg("t")).metadata["caller_token"] == text_with(kind, marker)
    assert Validator(root).run() == []


@pytest.mark.parametrize("kind", list(MORE))
def test_default_redaction_also_catches_the_other_documented_forms(tmp_path: Path, kind: str) -> None:
    secret = MORE[kind]
    graph = chat_graph(RepoSaver(tmp_path, durable=False))
    graph.invoke({"messages": [HumanMessage(content=f"token={secret};")]}, cfg("t"))
    assert files_containing(tmp_path, secret) == []
    assert f"token=[REDACTED:{kind}];" in all_text(tmp_path)


def test_every_default_pattern_has_a_sample_and_the_fast_search_finds_it() -> None:
    assert set(SECRETS) == set(DEFAULT_PATTERNS)
    for kind, secret in {**SECRETS, **MORE}.items():
        text = text_with(kind, secret)
        assert might_contain_secret(text.encode()), kind
        assert Redactor().redact_text(text) == text_with(kind, f"[REDACTED:{kind}]"), kind


def test_large_values_are_redacted_before_their_file_is_named(tmp_path: Path) -> None:
    secret = SECRETS["openai-key"]
    graph = chat_graph(RepoSaver(tmp_path, durable=False))
    graph.invoke({"messages": [HumanMessage(content=f"{secret} {BIG_TEXT}")]}, cfg("t"))
    # a message is an object whatever its size, named by the hash of its redacted tree; over
    # large_value_bytes it is kept out of the checkpoint, in objects/ (format 4)
    held = list((tmp_path / "threads/t/objects").iterdir())
    assert held, "the message should have gone to objects/"
    assert any("[REDACTED:openai-key] 0123" in p.read_text() for p in held)
    assert files_containing(tmp_path, secret) == []
    assert Validator(tmp_path).run() == []  # names still match the sha256 of the content


def test_a_conversation_with_a_secret_continues_and_is_still_stored_as_appends(tmp_path: Path) -> None:
    secret = SECRETS["github-token"]
    graph = chat_graph(RepoSaver(tmp_path, durable=False))
    for text in (f"first {secret}", "second", f"third {secret}", "fourth"):
        graph.invoke({"messages": [HumanMessage(content=text)]}, cfg("t"))
    # and a new saver (a new process) reads the redacted history and appends to it
    graph = chat_graph(RepoSaver(tmp_path, durable=False))
    graph.invoke({"messages": [HumanMessage(content=f"fifth {secret}")]}, cfg("t"))
    contents = [m.content for m in graph.get_state(cfg("t")).values["messages"]]
    marker = "[REDACTED:github-token]"
    assert contents[::2] == [f"first {marker}", "second", f"third {marker}", "fourth", f"fifth {marker}"]
    assert files_containing(tmp_path, secret) == []
    checkpoints = sorted((tmp_path / "threads/t/checkpoints").iterdir())
    assert '"append"' in checkpoints[-1].read_text()
    assert Validator(tmp_path).run() == []


class Bag(TypedDict, total=False):
    data: dict[str, Any]
    messages: list[Any]


def test_dict_keys_tool_call_args_and_nested_values_are_redacted_but_type_names_are_not(
    tmp_path: Path,
) -> None:
    secret, other = SECRETS["openai-key"], MORE["openai-key"]
    builder = StateGraph(Bag)
    builder.add_node(
        "n",
        lambda s: {
            "messages": [
                AIMessage(
                    content="",
                    tool_calls=[{"name": "call_api", "args": {"api_key": secret}, "id": "c1"}],
                    additional_kwargs={"headers": {"Authorization": f"Bearer {SECRETS['bearer-token']}"}},
                )
            ]
        },
    )
    builder.add_edge(START, "n")
    builder.add_edge("n", END)
    graph = builder.compile(checkpointer=RepoSaver(tmp_path, durable=False))
    data = {secret: "owner-1", other: "owner-2", "nested": [{"token": secret}], "bytes": b"raw"}
    graph.invoke({"data": data, "messages": []}, cfg("t"))

    text = all_text(tmp_path)
    assert files_containing(tmp_path, secret) == [] and files_containing(tmp_path, other) == []
    assert files_containing(tmp_path, SECRETS["bearer-token"]) == []
    assert '"langchain_core.messages.ai"' in text and '"AIMessage"' in text
    state = graph.get_state(cfg("t")).values
    # two keys that redact to the same marker stay two keys
    assert state["data"] == {
        "[REDACTED:openai-key]": "owner-1",
        "[REDACTED:openai-key]#2": "owner-2",
        "nested": [{"token": "[REDACTED:openai-key]"}],
        "bytes": b"raw",
    }
    (message,) = state["messages"]
    assert isinstance(message, AIMessage)  # the type was revived: its names were left alone
    assert message.tool_calls[0]["args"] == {"api_key": "[REDACTED:openai-key]"}
    assert message.additional_kwargs == {"headers": {"Authorization": "Bearer [REDACTED:bearer-token]"}}


# ----------------------------------------------------------------------
# your own rules, and off
# ----------------------------------------------------------------------
def test_a_custom_callable_redacts_by_its_own_rule_after_the_defaults(tmp_path: Path) -> None:
    def no_passwords(text: str) -> str:
        return re.sub(r"(?<=password: )\S+", "[REDACTED:password]", text)

    graph = chat_graph(RepoSaver(tmp_path, durable=False, redact=no_passwords))
    graph.invoke(
        {"messages": [HumanMessage(content=f"password: hunter2 key: {SECRETS['slack-token']}")]}, cfg("t")
    )
    assert files_containing(tmp_path, "hunter2") == []
    assert files_containing(tmp_path, SECRETS["slack-token"]) == []
    content = chat_graph(RepoSaver(tmp_path)).get_state(cfg("t")).values["messages"][0].content
    assert content == "password: [REDACTED:password] key: [REDACTED:slack-token]"


def test_custom_patterns_redact_with_their_named_or_custom_marker(tmp_path: Path) -> None:
    named = chat_graph(RepoSaver(tmp_path / "a", durable=False, redact={"employee-id": r"EMP-\d{6}"}))
    named.invoke({"messages": [HumanMessage(content="ask EMP-004211 about it")]}, cfg("t"))
    listed = chat_graph(RepoSaver(tmp_path / "b", durable=False, redact=[re.compile(r"EMP-\d{6}")]))
    listed.invoke({"messages": [HumanMessage(content="ask EMP-004211 about it")]}, cfg("t"))
    assert files_containing(tmp_path, "EMP-004211") == []
    assert "ask [REDACTED:employee-id] about it" in all_text(tmp_path / "a")
    assert "ask [REDACTED:custom] about it" in all_text(tmp_path / "b")


def test_a_redactor_without_defaults_applies_only_its_own_patterns(tmp_path: Path) -> None:
    saver = RepoSaver(tmp_path, durable=False, redact=Redactor({"pin": r"\bPIN \d{4}\b"}, defaults=False))
    chat_graph(saver).invoke({"messages": [HumanMessage(content=f"PIN 1234 {SECRETS['jwt']}")]}, cfg("t"))
    assert files_containing(tmp_path, "PIN 1234") == []
    assert files_containing(tmp_path, SECRETS["jwt"]) != []


def test_redact_false_keeps_values_verbatim(tmp_path: Path) -> None:
    text = " ".join(text_with(k, s) for k, s in SECRETS.items())
    graph = chat_graph(RepoSaver(tmp_path, durable=False, redact=False))
    graph.invoke({"messages": [HumanMessage(content=text)]}, cfg("t"))
    assert graph.get_state(cfg("t")).values["messages"][0].content == text
    assert files_containing(tmp_path, SECRETS["openai-key"]) != []
    assert "REDACTED" not in all_text(tmp_path)


ORDINARY = [
    "the sky-blue widget",
    "task-123 and task-abcdefghijklmnopqrstuvwxyz0123",
    "please ask-the-desk-about-the-weekly-report-now",
    "sk-learn-is-a-python-library-for-machine-learning",
    "risk-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    base64.b64encode(b"an ordinary sentence that is not a secret at all, only long").decode(),
    "id 1f1ec1b1-40ac-60e0-bfff-6749813d90cc and 6f1c2e4e-9b1d-4c2a-8f7e-0a1b2c3d4e5f",
    "The AKIA prefix marks AWS key ids; AIza marks Google keys; eyJ starts a JWT.",
    "Send a Bearer token in the header.",
    "-----BEGIN CERTIFICATE-----\nMIIB" + _R + "\n-----END CERTIFICATE-----",
    "xoxo, hugs; github_pat is a prefix; sk_test_ keys are for testing",
    "MASKAKIAIOSFODNN7EXAMPLEX",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_not_redacted(tmp_path: Path, text: str) -> None:
    graph = chat_graph(RepoSaver(tmp_path, durable=False))
    graph.invoke({"messages": [HumanMessage(content=text)]}, cfg("t"))
    assert graph.get_state(cfg("t")).values["messages"][0].content == text
    assert "REDACTED" not in all_text(tmp_path)
    assert Redactor().redact_text(text) == text


# ----------------------------------------------------------------------
# validate
# ----------------------------------------------------------------------
def test_validate_reports_a_planted_secret_by_file_and_pointer_without_printing_it(tmp_path: Path) -> None:
    secret = SECRETS["openai-key"]
    graph = chat_graph(RepoSaver(tmp_path, durable=False, redact=False))
    graph.invoke({"messages": [HumanMessage(content=f"key {secret}")]}, cfg("t"))

    proc = cli(tmp_path, "validate")
    assert proc.returncode == 1, proc.stderr
    assert secret not in proc.stdout + proc.stderr
    assert secret[:12] not in proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines and all("looks like an OpenAI API key (sk-p…)" in line for line in lines)
    # one line per place: each message holding it (the user's and the echo) is stored once
    # (format 4: in the checkpoint that introduced it), named with its pointer
    places = {tuple(line.split(": ", 2)[:2]) for line in lines}
    assert len(places) == len(lines) == 2, lines
    assert all(
        "/threads/t/checkpoints/" in p and re.fullmatch(r"/objects/[0-9a-f]{16}/\$fields/content", pointer)
        for p, pointer in places
    ), places

    assert cli(tmp_path, "validate", "--no-secrets").returncode == 0
    problems = Validator(tmp_path, secrets=False).run()
    assert problems == []


def test_validate_finds_a_secret_planted_in_a_dict_key_and_in_metadata(tmp_path: Path) -> None:
    secret = SECRETS["aws-access-key-id"]
    config = cfg("t")
    config["metadata"] = {"aws": secret}
    graph = line_graph(
        Bag, RepoSaver(tmp_path, durable=False, redact=False), n=lambda s: {"messages": ["done"]}
    )
    graph.invoke({"data": {secret: "x"}}, config)
    problems = Validator(tmp_path).run()
    pointers = {p.pointer for p in problems}
    assert "/metadata/aws" in pointers
    assert "/new_values/data/value/json/AKIA…" in pointers  # the key is masked in the pointer too
    assert all(secret not in p.message and secret not in p.pointer for p in problems)
    assert all(p.message.startswith("looks like an AWS access key id (AKIA…)") for p in problems)
    shown = cli(tmp_path, "validate")
    assert shown.returncode == 1 and secret not in shown.stdout + shown.stderr


def test_validate_reads_integers_beyond_64_bits_without_a_traceback(tmp_path: Path) -> None:
    """Valid JSON the saver itself cannot write (msgpack stops at 64 bits), added by hand."""
    graph = chat_graph(RepoSaver(tmp_path, durable=False))
    graph.invoke({"messages": [HumanMessage(content="hi")]}, cfg("t"))
    path = sorted((tmp_path / "threads/t/checkpoints").iterdir())[-1]
    doc = json.loads(path.read_text())
    doc["metadata"]["big"] = 2**70
    path.write_text(json.dumps(doc))
    proc = cli(tmp_path, "validate")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stderr.startswith("ok: ") and "Traceback" not in proc.stderr


# ----------------------------------------------------------------------
# EncryptedSerializer
# ----------------------------------------------------------------------
KEY = b"0123456789abcdef0123456789abcdef"
SCRIPT = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {tests!r})
    from graphs import chat_graph, cfg
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
    from langgraph_checkpoint_repo import RepoSaver

    serde = EncryptedSerializer.from_pycryptodome_aes(key={key!r})
    graph = chat_graph(RepoSaver({root!r}, serde=serde))
    config = cfg("vault")
    config["metadata"] = {{"team": "payments"}}
    graph.invoke({{"messages": [HumanMessage(content=sys.argv[1])]}}, config)
    print("|".join(m.content for m in graph.get_state(cfg("vault")).values["messages"]))
    """
)


def _encrypted_turn(root: Path, text: str) -> str:
    script = SCRIPT.format(tests=str(Path(__file__).parent), key=KEY, root=str(root))
    proc = subprocess.run(
        [sys.executable, "-c", script, text], capture_output=True, text=True, timeout=120, input=""
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_encrypted_serializer_runs_resumes_in_another_process_and_hides_the_text(tmp_path: Path) -> None:
    first = _encrypted_turn(tmp_path, "the launch code is tangerine-42")
    second = _encrypted_turn(tmp_path, "and the backup is persimmon-7")
    assert first == "the launch code is tangerine-42|echo: the launch code is tangerine-42"
    assert second == first + "|and the backup is persimmon-7|echo: and the backup is persimmon-7"
    for word in ("tangerine", "persimmon", "launch code"):
        assert files_containing(tmp_path, word) == []
    text = all_text(tmp_path)
    assert '"serde": "msgpack+aes"' in text
    # metadata stays readable (filters and the command line need it), as in SqliteSaver
    saver = RepoSaver(tmp_path, serde=EncryptedSerializer.from_pycryptodome_aes(key=KEY))
    assert len(list(saver.list(cfg("vault"), filter={"team": "payments"}))) == len(
        list((tmp_path / "threads/vault/checkpoints").iterdir())
    )
    assert cli(tmp_path, "validate").returncode == 0


@pytest.mark.parametrize("serde", ["wrong key", "no key"])
def test_reading_encrypted_state_without_its_key_fails_naming_the_file(tmp_path: Path, serde: str) -> None:
    _encrypted_turn(tmp_path, "the launch code is tangerine-42")
    if serde == "wrong key":
        saver = RepoSaver(tmp_path, serde=EncryptedSerializer.from_pycryptodome_aes(key=b"f" * 32))
    else:
        saver = RepoSaver(tmp_path)
    with pytest.raises(UnrevivableValueError) as info:
        saver.get_tuple(cfg("vault"))
    message = str(info.value)
    assert str(tmp_path / "threads" / "vault") in message and ".json" in message
    expected = "written with another key" if serde == "wrong key" else "the value is encrypted (msgpack+aes)"
    assert expected in message


def test_validate_never_prints_a_secret_quoted_by_a_schema_error(tmp_path: Path) -> None:
    """A broken file whose bad value is a key: the schema error quotes it, masked."""
    secret = SECRETS["aws-access-key-id"]
    graph = chat_graph(RepoSaver(tmp_path, durable=False))
    graph.invoke({"messages": [HumanMessage(content="hi")]}, cfg("t"))
    path = sorted((tmp_path / "threads/t/checkpoints").iterdir())[-1]
    doc = json.loads(path.read_text())
    doc["metadata"]["step"] = secret  # a string where the schema wants an integer
    path.write_text(json.dumps(doc))
    proc = cli(tmp_path, "validate", "--no-secrets")
    assert proc.returncode == 1
    assert "/metadata/step" in proc.stdout and "AKIA…" in proc.stdout
    assert secret not in proc.stdout + proc.stderr
