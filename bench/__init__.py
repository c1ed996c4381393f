"""Benchmark of RepoSaver beside SqliteSaver and InMemorySaver; run it with ``python bench/run.py``.

- ``common``: saver names, sizes, timing and disk helpers, the call counter.
- ``machine``: machine description and filesystem probe.
- ``workloads``: one module a workload, and the registry ``WORKLOADS``.
- ``goals``: every goal, once, as data; checked and printed from there.
- ``report``: result rows and the Markdown report.
- ``run``: the command line.
"""
