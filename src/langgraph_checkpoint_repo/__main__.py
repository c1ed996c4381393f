"""``python -m langgraph_checkpoint_repo``: the ``langgraph-repo`` command line."""

from .cli import main

if __name__ == "__main__":
    main()
