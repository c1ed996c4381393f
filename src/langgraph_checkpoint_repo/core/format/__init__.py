"""The on-disk format, and the only code that knows it.

Its markers (``$ref``, ``$in``, ``$ns``, ``$chunks``, ``$fields``, ``new_values``,
``parent_writes`` ...) and mechanisms (shared objects, append chains, ``values/`` and
``large/`` files, short versions, schemas, migrations) live here; every other module asks
these modules through functions and records (tests/test_layers.py enforces it).
"""
