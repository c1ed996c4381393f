"""``python -m langgraph_checkpoint_repo``: the ``langgraph-repo`` command line.

``python -m`` puts the current folder first on ``sys.path``; run at the top of a checkout,
a file there (``numpy.py``, ``tzdata/``) would shadow what reviving a value imports. The
command line reads state without running the checkout's code, so that entry goes before
anything else is imported (the ``langgraph-repo`` script never has it).
"""

import os
import sys

if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from .cli import main

if __name__ == "__main__":
    main()
