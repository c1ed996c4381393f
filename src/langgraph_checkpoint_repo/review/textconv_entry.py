"""The git diff driver as git runs it: ``python -I -S <this file> --view N FILE``.

``langgraph-repo git-setup`` registers this file, by its absolute path, as the textconv
command (cli/gitsetup.py, ``driver_command``), and git starts it once per file version it
prints, so a start pays for the standard library the view uses and for nothing else:

- ``-S``: no ``site``, so no site-packages folder is scanned and no ``.pth`` file runs (a
  virtual environment's can import anything, on every start);
- ``-I``: neither the current folder (git runs the driver at the top of the work tree, where a
  pull request may have planted a ``json.py``) nor this file's folder is put on ``sys.path``,
  and no ``PYTHON*`` variable nor the user's site-packages is read;
- the folder holding this package is appended to ``sys.path``, after the standard library, so
  nothing in it can shadow a standard module, and this install's code is what runs;
- the package's ``__init__`` imports nothing (its public names are imported on first use), so
  the import reaches review/textconv.py and the modules of its view only (a test runs this
  file as git does and checks every module it imported);
- those import no more of the standard library than ``os``, ``_json`` (the C half of
  ``json``, through core/cjson.py) and CPython's own SHA-256: not ``re`` (with enum and
  functools), the ``json`` package, collections, math or bisect. A regex is compiled only
  for a line that may hold a secret, the ``json`` package imported only to say why a file is
  not JSON. A start on a small checkpoint file is 6 to 7 ms above ``python -I -S -c pass``
  (it was 16 to 19 ms: docs/review.md, "Start-up time").
"""

import os
import sys

if __name__ == "__main__":
    sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from langgraph_checkpoint_repo.review.textconv import main

    sys.exit(main())
