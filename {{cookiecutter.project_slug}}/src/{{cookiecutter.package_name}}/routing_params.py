"""Reading a route's declared path, query and header parameters for FastRoute (routing.py).

FastAPI's `request_params_to_args` works out, on every request and for every parameter, what
depends only on the declaration: whether the parameter is a model, its aliases, whether its type
is a sequence (typing introspection). That was 11 % of a GET by id with one path and one header
parameter (py-spy). `ParamReader` works it out once, when the route is built, and per request does
what remains of the same steps, with FastAPI's own helpers: pick the alias present, get the
value (a list for a sequence), and validate it against the declared field, defaults included.

A declaration outside that plain case (a parameter model), or a FastAPI without these helpers,
reads through `request_params_to_args` itself. tests/test_routing_both_ways.py holds both to the
same answers.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from fastapi._compat import field_annotation_is_sequence
from fastapi.dependencies import utils as fastapi_utils
from fastapi.dependencies.utils import request_params_to_args
from pydantic_core import PydanticUndefined
from starlette.datastructures import Headers, ImmutableMultiDict

_HELPERS = (
    "_get_param_aliases",
    "_get_param_model",
    "_is_json_field",
    "_validate_value_with_model_field",
)
# (field, (validation alias, request key) pairs, read a list?, empty list is missing?, location)
_Plan = tuple[Any, list[tuple[str, str]], bool, bool, str]


def _plan(fields: Sequence[Any]) -> list[_Plan] | None:
    if not all(hasattr(fastapi_utils, name) for name in _HELPERS):
        return None
    plans = []
    for field in fields:
        if fastapi_utils._get_param_model(field) is not None:
            return None
        sequence = field_annotation_is_sequence(field.field_info.annotation)
        plans.append(
            (
                field,
                fastapi_utils._get_param_aliases(field),
                sequence and not fastapi_utils._is_json_field(field),
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

    def read(self, received: Mapping[str, Any]) -> tuple[dict[str, Any], list[Any]]:
        """The parameters' values by name, and the validation errors: as request_params_to_args."""
        if self._plans is None:
            return request_params_to_args(self._fields, received)
        values: dict[str, Any] = {}
        errors: list[Any] = []
        multi = isinstance(received, (ImmutableMultiDict, Headers))
        validate = fastapi_utils._validate_value_with_model_field
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
