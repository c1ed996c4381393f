"""The application of the docs' example project: its own state types (docs/examples.py)."""
