"""Reading a route's declared path, query and header parameters for FastRoute (routing.py).

FastAPI's `request_params_to_args` works out, on every request and for every parameter, what
depends only on the declaration: whether the parameter is a model, its aliases, whether its type
is a sequence (typing introspection). That was 11 % of a GET by id with one path and one header
parameter (py-spy). `ParamReader` works it out once, when the route is built, and per request does
what remains of the same steps, with FastAPI's own helpers (fastapi_internals.py): pick the alias
present, get the value (a list for a sequence), and validate it against the declared field,
defaults included.

A declaration outside that plain case (a parameter model), or a FastAPI without these helpers,
reads through `request_params_to_args` itself (`planned` is then False, and a missing helper is
logged once). tests/kit/test_param_reader.py holds both to the same answers.
"""

from collections.abc import Mapping, Sequence
from typing import Any

import structlog
from pydantic_core import PydanticUndefined
from starlette.datastructures import Headers, ImmutableMultiDict

from . import fastapi_internals as internals

logger = structlog.get_logger(__name__)
# (field, (validation alias, request key) pairs, read a list?, empty list is missing?, location)
_Plan = tuple[Any, list[tuple[str, str]], bool, bool, str]
_warned = False


def _plan(fields: Sequence[Any]) -> list[_Plan] | None:
    global _warned
    problems = internals.param_reader_problems()
    if problems:
        if not _warned:
            _warned = True
            logger.warning("params_read_unplanned", reason="; ".join(problems))
        return None
    get_param_model = internals.GET_PARAM_MODEL.get()
    get_param_aliases = internals.GET_PARAM_ALIASES.get()
    is_json_field = internals.IS_JSON_FIELD.get()
    is_sequence = internals.FIELD_IS_SEQUENCE.get()
    plans = []
    for field in fields:
        if get_param_model(field) is not None:
            return None
        sequence = is_sequence(field.field_info.annotation)
        plans.append(
            (
                field,
                get_param_aliases(field),
                sequence and not is_json_field(field),
                sequence,
                field.field_info.in_.value,
            )
        )
    return plans


class ParamReader:
    """Values and validation errors of one kind of parameter (path, query or header)."""

    def __init__(self, fields: Sequence[Any]) -> None:
        self._fields = fields
        self._plans = _plan(fields)
        self.planned = self._plans is not None
        # The plain path: FastAPI's own reader (its absence stops the fast handler altogether).
        self._unplanned = internals.REQUEST_PARAMS_TO_ARGS.get() if not self.planned else None
        self._validate = internals.VALIDATE_VALUE.get() if self.planned else None

    def read(self, received: Mapping[str, Any]) -> tuple[dict[str, Any], list[Any]]:
        """The parameters' values by name, and the validation errors: as request_params_to_args."""
        if self._plans is None:
            assert self._unplanned is not None
            result: tuple[dict[str, Any], list[Any]] = self._unplanned(self._fields, received)
            return result
        values: dict[str, Any] = {}
        errors: list[Any] = []
        multi = isinstance(received, (ImmutableMultiDict, Headers))
        validate = self._validate
        assert validate is not None
        for field, aliases, as_list, empty_is_missing, location in self._plans:
            alias = aliases[0][1]
            if len(aliases) > 1:
                alias = next((key for _, key in aliases if key in received), alias)
            value = received.getlist(alias) if as_list and multi else received.get(alias)  # type: ignore[attr-defined]
            if value is None or (empty_is_missing and len(value) == 0):
                value = PydanticUndefined
            found, failed = validate(field=field, value=value, values=values, loc=(location, alias))
            if failed:
                errors.extend(failed)
            else:
                values[field.name] = found
        return values, errors
