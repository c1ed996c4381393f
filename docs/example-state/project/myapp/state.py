"""State types of the example application: the command line shows them without importing this
module unless ``--allow myapp.state:*`` says it may (docs/types.md)."""

from __future__ import annotations

from datetime import timedelta
from enum import Enum

from pydantic import BaseModel


class Color(Enum):
    RED = "red"
    GREEN = "green"


class Address(BaseModel):
    city: str
    zip: str


class Customer(BaseModel):
    name: str
    tier: str
    color: Color
    address: Address
    due: timedelta
