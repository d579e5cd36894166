"""What a resource's routes read from the URL: the row id in the path (the page and filters in
the query: listing.py), each in its one spelling.

Canonical decimal only: "+1", "01", "1.0", "1_0", " 1" and non-ASCII digits would all parse as
integers; one resource has one URL (what proxies and caches see is what is read).
"""

import re
from typing import Annotated

from fastapi import Path
from pydantic import BeforeValidator

from .numbers import INT64_MAX

# The patterns document the validator in the OpenAPI schema (clients, fuzzers); the validator
# enforces them with a clearer message.
POSITIVE_DECIMAL = r"^[1-9][0-9]{0,18}$"
DECIMAL = r"^(?:0|[1-9][0-9]{0,18})$"


def spelled(pattern: str, what: str) -> BeforeValidator:
    """Refuses a string that is not wholly `pattern` ("must be `what`"); other values pass on to
    the field's type. URL values are strings, read leniently: their spelling is checked here."""
    compiled = re.compile(pattern.removeprefix("^").removesuffix("$"))

    def check(value: object) -> object:
        if isinstance(value, str) and compiled.fullmatch(value) is None:
            raise ValueError(f"must be {what}")
        return value

    return BeforeValidator(check)


def canonical_digits(pattern: str) -> BeforeValidator:
    return spelled(pattern, "ASCII digits without sign, leading zeros, separators or spaces")


RowId = Annotated[
    int,
    Path(
        ge=1,
        le=INT64_MAX,
        description="The id, in canonical decimal (no sign, zeros or spaces).",
        json_schema_extra={"pattern": POSITIVE_DECIMAL},
    ),
    canonical_digits(POSITIVE_DECIMAL),
]
