"""The review of state in a pull request: what changed between two git revisions, per thread,
as a conversation (``langgraph-repo review``), and git's own views of the files (the textconv
driver and ``git-setup``).

A tool over the core and the read model: it reads files and git, constructs nothing and
imports no LangGraph, so CI can run it on a pull request without running its code.
"""
