"""Request bodies derived from a resource's declaration (its `...Fields` model), so that a field
added there is in every test's bodies without a test being edited.

`new_body` is a valid create body whose values differ from call to call (unique fields stay
unique); `change` is a valid one-field PATCH body.
"""

import itertools
import random
import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any, get_args

from {{ cookiecutter.package_name }}.kit import FieldType, Resource, field_type
from {{ cookiecutter.package_name }}.serving.resources import RESOURCES

# Every test of the machinery runs against the first resource of the service.
RESOURCE: Resource | None = RESOURCES[0] if RESOURCES else None
# Values differ between runs on one database as well as between calls.
_counter = itertools.count(random.randrange(1, 10**6) * 1000)


def first_resource() -> Resource:
    assert RESOURCE is not None, "the service has no resource: serving/resources.py lists none"
    return RESOURCE


def _marker(resource: Resource, name: str) -> FieldType:
    marker = field_type(resource.fields.model_fields[name].metadata)
    assert marker is not None, f"{name} is declared without a kit field type"
    return marker


def value_for(resource: Resource, name: str, n: int) -> Any:
    """A valid JSON value for field `name`, different for each `n` where the type allows."""
    info = resource.fields.model_fields[name]
    marker = _marker(resource, name)
    kind = marker.kind
    if kind == "str":
        text = f"{name} {n}"
        return text[-marker.max_length :].ljust(marker.min_length, "x")  # type: ignore[attr-defined]
    if kind == "text":
        return f"{name} {n}"[-marker.max_length :]  # type: ignore[attr-defined]
    if kind in ("int", "bigint", "money"):
        ge, le = marker.ge, marker.le  # type: ignore[attr-defined]
        return ge + n % (le - ge + 1)
    if kind == "bool":
        return n % 2 == 0
    if kind == "date":
        return (date(2000, 1, 1) + timedelta(days=n % 3_000_000)).isoformat()
    if kind == "timestamp":
        instant = datetime(2000, 1, 1, tzinfo=UTC) + timedelta(seconds=n)
        return instant.isoformat().replace("+00:00", "Z")
    if kind == "uuid":
        return str(uuid.UUID(int=n))
    if kind == "enum":
        choices = get_args(info.annotation)
        literal = next(arg for arg in choices if get_args(arg)) if type(None) in choices else None
        values = get_args(literal) if literal is not None else choices
        return values[n % len(values)]
    raise AssertionError(f"no value for a {kind} field")


def new_body(resource: Resource | None = None, **overrides: Any) -> dict[str, Any]:
    """A valid create body: every declared field, required or not, with fresh values."""
    resource = resource or first_resource()
    n = next(_counter)
    body = {name: value_for(resource, name, n) for name in resource.fields.model_fields}
    return {**body, **overrides}


def change(resource: Resource | None = None) -> dict[str, Any]:
    """A valid PATCH body changing one field (the last declared, to a fresh value)."""
    resource = resource or first_resource()
    name = list(resource.fields.model_fields)[-1]
    return {name: value_for(resource, name, next(_counter))}
