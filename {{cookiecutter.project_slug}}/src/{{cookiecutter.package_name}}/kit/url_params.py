"""What a resource's routes read from the URL: the row id in the path, the page in the query.

Canonical decimal only: "+1", "01", "1.0", "1_0", " 1" and non-ASCII digits would all parse as
integers; one resource has one URL (what proxies and caches see is what is read).
"""

import re
from typing import Annotated

from fastapi import Path, Query
from pydantic import BeforeValidator

from .numbers import INT64_MAX

# The patterns document the validator in the OpenAPI schema (clients, fuzzers); the validator
# enforces them with a clearer message.
POSITIVE_DECIMAL = r"^[1-9][0-9]{0,18}$"
DECIMAL = r"^(?:0|[1-9][0-9]{0,18})$"


def _canonical_digits(pattern: str) -> BeforeValidator:
    digits = re.compile(pattern.removeprefix("^").removesuffix("$"))

    def check(value: object) -> object:
        if isinstance(value, str) and digits.fullmatch(value) is None:
            raise ValueError(
                "must be ASCII digits without sign, leading zeros, separators or spaces"
            )
        return value

    return BeforeValidator(check)


RowId = Annotated[
    int,
    Path(
        ge=1,
        le=INT64_MAX,
        description="The id, in canonical decimal (no sign, zeros or spaces).",
        json_schema_extra={"pattern": POSITIVE_DECIMAL},
    ),
    _canonical_digits(POSITIVE_DECIMAL),
]
PageLimit = Annotated[
    int,
    Query(
        ge=1,
        le=500,
        description="Page size, 1 to 500.",
        json_schema_extra={"pattern": POSITIVE_DECIMAL},
    ),
    _canonical_digits(POSITIVE_DECIMAL),
]
PageAfter = Annotated[
    int,
    Query(
        ge=0,
        le=INT64_MAX,
        description="Last id of the previous page (its `next_after`); 0 for the first page.",
        json_schema_extra={"pattern": DECIMAL},
    ),
    _canonical_digits(DECIMAL),
]
