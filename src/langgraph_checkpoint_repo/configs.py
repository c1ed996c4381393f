"""The two readings of a LangGraph ``RunnableConfig`` every adapter needs: which thread and
namespace it names, and the config that names one checkpoint."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from .core.errors import RepoCheckpointError


def thread_ns(config: RunnableConfig) -> tuple[str, str]:
    """The thread id and checkpoint namespace ``config`` names; a thread id is required."""
    conf = config["configurable"]
    thread_id = conf.get("thread_id")
    if thread_id is None:
        raise RepoCheckpointError("config['configurable']['thread_id'] is required")
    return str(thread_id), str(conf.get("checkpoint_ns") or "")


def checkpoint_config(thread_id: str, ns: str, cid: str) -> RunnableConfig:
    """The config that names checkpoint ``cid`` of ``thread_id``'s namespace ``ns``."""
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": cid}}
