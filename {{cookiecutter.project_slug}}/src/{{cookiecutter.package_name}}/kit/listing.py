"""What a list route reads from its query: the page, the filters and the sort order.

A field is marked in its declaration (schemas.py) as one a client may filter on, sort by, or both:

    status: Annotated[Literal["open", "paid"], OneOf(), Filterable(), Sortable()]

and `list_query(ItemFields)` derives the list route's query model from those marks:

    ?<field>=v                      equality, every kind
    ?<field>.gt= .gte= .lt= .lte=   ranges: int, bigint, money, date, timestamp
    ?<field>.in=a,b                 one of a set of values: enum
    ?<field>.null=true|false        is null / is not null: an optional field
    ?sort=<field> | ?sort=-<field>  a sortable field, ascending or descending (id breaks ties)
    ?cursor=                        the previous sorted page's next_cursor
    ?limit= ?after=                 as ever: the page size, the id order's keyset

Filters combine with AND. Values are read in the one spelling the field's marker reads in a body
(canonical decimal integers, `true`/`false`, YYYY-MM-DD, RFC 3339 with its offset, lower-case
uuids); an unknown parameter (an unmarked field included) is a 422 naming it (extra="forbid").
"""

from dataclasses import dataclass
from types import NoneType, UnionType
from typing import Annotated, Any, ClassVar, Literal, Union, get_args, get_origin

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, create_model

from .fields import FieldType, field_type
from .numbers import INT64_MAX
from .url_params import DECIMAL, POSITIVE_DECIMAL, canonical_digits, spelled

# The kinds a range filter applies to: ordered values a client means as numbers or instants.
RANGE_KINDS = frozenset({"int", "bigint", "money", "date", "timestamp"})
RANGES = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
_INTEGER = r"-?(?:0|[1-9][0-9]{0,18})"


@dataclass(frozen=True)
class Filterable:
    """The field may be filtered on in the list route's query (and gets an index on (field, id))."""


@dataclass(frozen=True)
class Sortable:
    """The list route may be sorted by the field (and it gets an index on (field, id))."""


@dataclass(frozen=True)
class Condition:
    """One filter parameter: `column <operator> $n`; operator "in" is `= ANY($n)`, "null" is
    `IS [NOT] NULL`."""

    parameter: str  # as the client writes it: "price_cents.gte"
    attribute: str  # the query model's attribute: "price_cents__gte"
    column: str
    operator: str


def is_filterable(metadata: list[Any]) -> bool:
    return any(isinstance(item, Filterable) for item in metadata)


def is_sortable(metadata: list[Any]) -> bool:
    return any(isinstance(item, Sortable) for item in metadata)


def _canonical(kind: str) -> list[Any]:
    # Query values are strings; the query model reads them leniently (a body's strict types
    # take no string), so the one spelling a body's JSON would have is enforced here.
    if kind in ("int", "bigint", "money"):
        return [spelled(_INTEGER, "a decimal integer (no sign but -, no zeros)")]
    if kind == "bool":
        return [spelled("true|false", "true or false")]
    return []


def _comma_separated(value: object) -> object:
    # ?kind.in=a,b (or repeated: ?kind.in=a&kind.in=b): one list of values.
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list):
        return [part for item in value for part in str(item).split(",")]
    return value


def _non_null(annotation: Any) -> tuple[Any, bool]:
    """The annotation without None, and whether it allowed None."""
    if get_origin(annotation) in (Union, UnionType):
        args = [arg for arg in get_args(annotation) if arg is not NoneType]
        return (args[0] if len(args) == 1 else Union[tuple(args)]), len(args) < len(  # noqa: UP007
            get_args(annotation)
        )
    return annotation, False


class ListQuery(BaseModel):
    """Base of a list route's query model (`list_query`): the page, and what the marks allow."""

    # Lax: query values are strings ("20" is read as 20); their spelling is checked per field.
    model_config = ConfigDict(extra="forbid")

    conditions: ClassVar[tuple[Condition, ...]] = ()
    # Each sortable column, and whether it takes NULL; the type a cursor's value is cast to.
    sortable: ClassVar[dict[str, bool]] = {}
    column_types: ClassVar[dict[str, str]] = {}

    limit: Annotated[int, canonical_digits(POSITIVE_DECIMAL)] = Field(
        20,
        ge=1,
        le=500,
        description="Page size, 1 to 500.",
        json_schema_extra={"pattern": POSITIVE_DECIMAL},
    )
    after: Annotated[int, canonical_digits(DECIMAL)] = Field(
        0,
        ge=0,
        le=INT64_MAX,
        description="Id order only: the last id of the previous page (its `next_after`); 0 for "
        "the first page.",
        json_schema_extra={"pattern": DECIMAL},
    )

    @property
    def plain(self) -> bool:
        """The id-order page with no filter: the list as it was before filters."""
        return not self.filters() and getattr(self, "sort", None) is None and not self.cursor_sent

    @property
    def cursor_sent(self) -> str | None:
        cursor: str | None = getattr(self, "cursor", None)
        return cursor

    def filters(self) -> list[tuple[Condition, Any]]:
        """The filters sent, in declaration order, with their values."""
        return [
            (condition, getattr(self, condition.attribute))
            for condition in self.conditions
            if getattr(self, condition.attribute) is not None
        ]


def _filter_fields(
    name: str, marker: FieldType, base: Any, metadata: list[Any], nullable: bool
) -> dict[str, tuple[str, str, Any]]:
    """{parameter: (attribute, operator, annotation)} of one filterable field."""
    kept = [item for item in metadata if not isinstance(item, (Filterable, Sortable))]
    value = Annotated[(base, *kept, *_canonical(marker.kind))]
    found: dict[str, tuple[str, str, Any]] = {name: (name, "=", value)}
    if marker.kind in RANGE_KINDS:
        for suffix, operator in RANGES.items():
            found[f"{name}.{suffix}"] = (f"{name}__{suffix}", operator, value)
    if marker.kind == "enum":
        values = Annotated[list[base], BeforeValidator(_comma_separated), Field(min_length=1)]
        found[f"{name}.in"] = (f"{name}__in", "in", values)
    if nullable:
        found[f"{name}.null"] = (f"{name}__null", "null", Annotated[bool, *_canonical("bool")])
    return found


def list_query(declared: type[BaseModel]) -> type[ListQuery]:
    """The list route's query model of `declared`: a page, and the filters and sort orders its
    fields are marked for (the module's docstring). Read it as `Annotated[..., Query()]`."""
    definitions: dict[str, Any] = {}
    conditions: list[Condition] = []
    sortable: dict[str, bool] = {}
    column_types: dict[str, str] = {}
    for name, info in declared.model_fields.items():
        marker = field_type(info.metadata)
        base, nullable = _non_null(info.annotation)
        if marker is not None and is_filterable(info.metadata):
            fields = _filter_fields(name, marker, base, info.metadata, nullable)
            for parameter, (attribute, operator, annotation) in fields.items():
                definitions[attribute] = (annotation | None, Field(None, alias=parameter))
                conditions.append(Condition(parameter, attribute, name, operator))
        if marker is not None and is_sortable(info.metadata):
            sortable[name] = nullable
            column_types[name] = marker.column_type
    if sortable:
        orders = [order for name in sortable for order in (name, f"-{name}")]
        definitions["sort"] = (
            Literal[tuple(orders)] | None,
            Field(
                None,
                description="A field to sort by, `-` first for descending; id breaks "
                "ties; NULLs sort after every value ascending, before them descending.",
            ),
        )
        definitions["cursor"] = (
            str | None,
            Field(None, max_length=1000, description="The previous page's `next_cursor`."),
        )
    query: type[ListQuery] = create_model(
        declared.__name__.removesuffix("Fields") + "Query",
        __base__=ListQuery,
        __module__=declared.__module__,
        **definitions,
    )
    query.conditions = tuple(conditions)
    query.sortable = sortable
    query.column_types = column_types
    return query
