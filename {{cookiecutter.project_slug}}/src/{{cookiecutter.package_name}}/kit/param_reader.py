"""Reading a route's declared path, query and header parameters for FastRoute (routing.py).

FastAPI's `request_params_to_args` works out, on every request and for every parameter, what
depends only on the declaration: whether the parameter is a model, its aliases, whether its type
is a sequence (typing introspection). That was 11 % of a GET by id with one path and one header
parameter (py-spy). `ParamReader` works it out once, when the route is built, and per request does
what remains of the same steps, with FastAPI's own helpers (fastapi_internals.py): pick the alias
present, get the value (a list for a sequence), and validate it against the declared field,
defaults included.

A query parameter model (a list route's filters, kit/listing.py) is planned the same way: its
fields' aliases and list-ness once, per request the values present, every other query key passed
along as FastAPI does (so that the model's extra="forbid" names it), one validation of the model.
Any other parameter model (headers, cookies, an optional model), or a FastAPI without these
helpers, reads through `request_params_to_args` itself (`planned` is then False, and a missing
helper is logged once). tests/kit/test_param_reader.py holds both to the same answers.
"""

from collections.abc import Mapping, Sequence
from typing import Any

import structlog
from pydantic_core import PydanticUndefined
from starlette.datastructures import Headers, ImmutableMultiDict

from . import fastapi_internals as internals

logger = structlog.get_logger(__name__)
# (field, (validation alias, request key) pairs, read a list?, empty list is missing?, location,
#  the plans of a query model's fields or None)
_Plan = tuple[Any, list[tuple[str, str]], bool, bool, str, "list[_Plan] | None"]
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
    plans: list[_Plan] = []
    for field in fields:
        model = get_param_model(field)
        # A query model's own fields are plain pydantic fields: they are read from its location.
        location = getattr(getattr(field.field_info, "in_", None), "value", "query")
        inner = None
        if model is not None:
            # Only a query model taken as it is declared; anything else reads FastAPI's way.
            if location != "query" or field.field_info.annotation is not model:
                return None
            inner = _plan(internals.GET_CACHED_MODEL_FIELDS.get()(model))
            if inner is None or any(plan[5] is not None for plan in inner):
                return None
        sequence = is_sequence(field.field_info.annotation)
        plans.append(
            (
                field,
                get_param_aliases(field),
                sequence and not is_json_field(field),
                sequence,
                location,
                inner,
            )
        )
    return plans


def _present(plan: _Plan, received: Mapping[str, Any], multi: bool) -> tuple[str, str, Any]:
    """(validation alias, request key, value or PydanticUndefined) of one planned field."""
    _, aliases, as_list, empty_is_missing, _, _ = plan
    alias, key = aliases[0]
    if len(aliases) > 1:
        alias, key = next((pair for pair in aliases if pair[1] in received), aliases[0])
    value = received.getlist(key) if as_list and multi else received.get(key)  # type: ignore[attr-defined]
    if value is None or (empty_is_missing and len(value) == 0):
        value = PydanticUndefined
    return alias, key, value


def _model_input(inner: list[_Plan], received: Mapping[str, Any]) -> dict[str, Any]:
    """What FastAPI validates a query model with: its fields present, and every other key (the
    model's `extra` policy decides), a repeated key as a list."""
    multi = isinstance(received, ImmutableMultiDict)
    found: dict[str, Any] = {}
    processed: set[str] = set()
    for plan in inner:
        alias, key, value = _present(plan, received, multi)
        if value is not PydanticUndefined:
            found[alias] = value
        processed.add(key)
    items = received.multi_items() if multi else received.items()  # type: ignore[attr-defined]
    extras: dict[str, list[Any]] = {}
    for key, value in items:
        if key not in processed:
            extras.setdefault(key, []).append(value)
    found.update({key: values[0] if len(values) == 1 else values for key, values in extras.items()})
    return found


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
        for plan in self._plans:
            field, location, inner = plan[0], plan[4], plan[5]
            if inner is not None:
                value: Any = _model_input(inner, received)
                loc: tuple[str, ...] = (location,)
            else:
                _, alias, value = _present(plan, received, multi)
                loc = (location, alias)
            found, failed = validate(field=field, value=value, values=values, loc=loc)
            if failed:
                errors.extend(failed)
            else:
                values[field.name] = found
        return values, errors
