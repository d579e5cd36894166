"""The field spec: a resource's fields written on one line, and what each field becomes.

    sku:str(32):unique name:str(200):filter:sort note:text? price_cents:money:filter:sort
    quantity:int(>=0)=0
    active:bool=true kind:enum(retail|wholesale) due:date? paid_at:timestamp? ref:uuid?

A field is `name:type`, then `?` for optional (nullable, null by default), then `=value` for a
default, then flags: `:unique` for a value no two rows share, `:filter` for a field the list
route filters on, `:sort` for one it sorts by (either makes an index on (field, id)). Types:

    str(N)        one line of 1 to N characters              varchar(N)
    text, text(N) text of at most N characters (10000)        text
    int           an integer within int32                    integer
    bigint        an integer within int64                    bigint
    money         an amount in integer minor units, >= 0     bigint
    bool          true or false                              boolean
    date          YYYY-MM-DD                                 date
    timestamp     RFC 3339 with its offset, stored in UTC    timestamptz
    uuid          canonical lower-case UUID                  uuid
    enum(a|b|c)   one of the listed strings                  text with a CHECK

int, bigint and money take bounds: int(>=0), bigint(>=-5,<=5), money(<=100000), within ±2**53
(or the type's own limits). Names are snake_case, not one of the columns every row has (id,
created_at, updated_at, version), and short enough for PostgreSQL beside their table's name
(scaffold/names.py).

Standard library only: the bake's pre-generation hook runs this before any package is installed.
"""

import keyword
import re
from dataclasses import dataclass
from datetime import date

from .names import SNAKE_CASE, SQL_RESERVED

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
# The largest integer a JSON number holds exactly (an IEEE 754 double, as FastAPI writes a bound):
# kit/numbers.py's JSON_EXACT_INTEGER, which the hook cannot import (it runs before any install).
JSON_EXACT = 2**53
DEFAULT_TEXT_LENGTH = 10_000
ENUM_VALUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# Columns every row has, and names that would shadow an attribute of a pydantic model or a
# parameter of the routes.
RESERVED = {
    "id",
    "created_at",
    "updated_at",
    "version",
    "after",
    "limit",
    "sort",
    "cursor",
    "body",
    "fields",
    "retired_fields",
    # pydantic's BaseModel has these (deprecated) methods: a field would shadow one.
    "construct",
    "copy",
    "dict",
    "from_orm",
    "json",
    "parse_file",
    "parse_obj",
    "parse_raw",
    "schema",
    "schema_json",
    "update_forward_refs",
    "validate",
}
_FIELD = re.compile(
    r"(?P<name>[^:]+):(?P<type>[a-z]+)(?:\((?P<args>[^)]*)\))?(?P<optional>\?)?"
    r"(?:=(?P<default>[^:]+))?(?P<flags>(?::[a-z]+)*)"
)
_BOUND = re.compile(r"(>=|<=)(-?(?:0|[1-9][0-9]*))")
_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_INTEGER_TYPES = {"int": ("Int", "integer", INT32), "bigint": ("BigInt", "bigint", INT64)}
_INTEGER_TYPES["money"] = ("Money", "bigint", INT64)
_TYPES = {"str", "text", "bool", "date", "timestamp", "uuid", "enum", *_INTEGER_TYPES}
_UNIQUE_TYPES = {"str", "text", "int", "bigint", "money", "date", "timestamp", "uuid"}
FLAGS = {"unique", "filter", "sort"}


class SpecError(ValueError):
    """A field spec that cannot be generated; the message names the field."""


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    nullable: bool = False
    default: str | None = None  # as written in the spec
    unique: bool = False
    filter: bool = False  # the list route filters on it
    sort: bool = False  # the list route sorts by it
    max_length: int | None = None  # str, text
    ge: int | None = None  # int, bigint, money
    le: int | None = None
    choices: tuple[str, ...] = ()  # enum

    @property
    def required(self) -> bool:
        return not self.nullable and self.default is None

    # The Python side: the annotation of the declaration, its default, the imports it needs.
    @property
    def marker(self) -> str:
        if self.type == "str":
            return f"Str(max_length={self.max_length})"
        if self.type == "text":
            length = (
                "" if self.max_length == DEFAULT_TEXT_LENGTH else f"max_length={self.max_length}"
            )
            return f"Text({length})"
        if self.type in _INTEGER_TYPES:
            implied = 0 if self.type == "money" else None  # Money() is >= 0 unless told
            bounds = [f"ge={self.ge}"] if self.ge is not None and self.ge != implied else []
            bounds += [f"le={self.le}"] if self.le is not None else []
            return f"{_INTEGER_TYPES[self.type][0]}({', '.join(bounds)})"
        return {
            "bool": "Bool()",
            "date": "Date()",
            "timestamp": "Timestamp()",
            "uuid": "Uuid()",
            "enum": "OneOf()",
        }[self.type]

    @property
    def python_type(self) -> str:
        if self.type == "enum":
            return "Literal[" + ", ".join(f'"{choice}"' for choice in self.choices) + "]"
        return {
            "str": "str",
            "text": "str",
            "bool": "bool",
            "date": "date",
            "timestamp": "datetime",
            "uuid": "UUID",
        }.get(self.type, "int")

    @property
    def annotation(self) -> str:
        kind = self.python_type + (" | None" if self.nullable else "")
        unique = ", Unique()" if self.unique else ""
        listed = (", Filterable()" if self.filter else "") + (", Sortable()" if self.sort else "")
        return f"Annotated[{kind}, {self.marker}{unique}{listed}]"

    @property
    def python_default(self) -> str | None:
        """The default as Python source, or None for a required field."""
        if self.default is None:
            return "None" if self.nullable else None
        if self.type == "bool":
            return "True" if self.default == "true" else "False"
        if self.type in _INTEGER_TYPES:
            return self.default
        if self.type == "date":
            year, month, day = (int(part) for part in self.default.split("-"))
            return f"date({year}, {month}, {day})"
        # Double quotes as ruff writes them; the spec refuses `"` and `\` in a default, so the
        # text needs no escaping (a `'` in it stays as it is).
        return f'"{self.default}"'

    @property
    def kit_names(self) -> set[str]:
        names = {self.marker.partition("(")[0]} | ({"Unique"} if self.unique else set())
        return (
            names
            | ({"Filterable"} if self.filter else set())
            | ({"Sortable"} if self.sort else set())
        )

    @property
    def indexed(self) -> bool:
        """The list route filters on it or sorts by it: an index on (field, id)."""
        return self.filter or self.sort

    @property
    def rules(self) -> str:
        """What a value must be, in words (the README's field tables)."""
        if self.type in _INTEGER_TYPES:
            low, high = _INTEGER_TYPES[self.type][2]
            ge = low if self.ge is None else self.ge
            le = high if self.le is None else self.le
            unit = "integer minor units (cents)" if self.type == "money" else "integer"
            rules = f"{unit}, {ge} to {le}"
        else:
            rules = {
                "str": f"one line, 1 to {self.max_length} characters",
                "text": f"at most {self.max_length} characters; tabs and line breaks allowed",
                "bool": "`true` or `false`",
                "date": "`YYYY-MM-DD`",
                "timestamp": "RFC 3339 with its offset; answered in UTC",
                "uuid": "lower-case, hyphenated",
                "enum": "one of " + ", ".join(f"`{choice}`" for choice in self.choices),
            }[self.type]
        return rules + ("; unique" if self.unique else "")

    # The SQL side: the column of the migration, mirroring the validation.
    @property
    def sql_type(self) -> str:
        if self.type == "str":
            return f"varchar({self.max_length})"
        if self.type in _INTEGER_TYPES:
            return _INTEGER_TYPES[self.type][1]
        return {
            "text": "text",
            "bool": "boolean",
            "date": "date",
            "timestamp": "timestamptz",
            "uuid": "uuid",
            "enum": "text",
        }[self.type]

    @property
    def sql_default(self) -> str | None:
        if self.default is None:
            return None
        if self.type in _INTEGER_TYPES or self.type == "bool":
            return self.default
        return "'" + self.default.replace("'", "''") + "'"

    @property
    def checks(self) -> list[str]:
        """The CHECK conditions that repeat the API's limits in the table."""
        name = self.name
        if self.type == "str":
            return [f"char_length({name}) >= 1"]
        if self.type == "text":
            return [f"char_length({name}) <= {self.max_length}"]
        if self.type == "enum":
            return [f"{name} IN (" + ", ".join(f"'{choice}'" for choice in self.choices) + ")"]
        if self.type in _INTEGER_TYPES:
            low, high = _INTEGER_TYPES[self.type][2]
            found = [f"{name} >= {self.ge}"] if self.ge is not None and self.ge != low else []
            return found + (
                [f"{name} <= {self.le}"] if self.le is not None and self.le != high else []
            )
        return []

    @property
    def column(self) -> str:
        """The column definition of CREATE TABLE."""
        parts = [self.name, self.sql_type]
        if not self.nullable:
            parts.append("NOT NULL")
        if self.sql_default is not None:
            parts.append(f"DEFAULT {self.sql_default}")
        parts += [f"CHECK ({check})" for check in self.checks]
        return " ".join(parts)


def _bounds(field: str, type_: str, args: str) -> tuple[int | None, int | None]:
    low, high = _INTEGER_TYPES[type_][2]
    ge: int | None = 0 if type_ == "money" else None
    le: int | None = None
    for part in filter(None, (piece.strip() for piece in args.split(","))):
        match = _BOUND.fullmatch(part)
        if match is None:
            raise SpecError(f"{field}: bound {part!r} is not >=N or <=N")
        value = int(match.group(2))
        if not low <= value <= high:
            raise SpecError(f"{field}: bound {value} is outside {type_} ({low}..{high})")
        if abs(value) > JSON_EXACT and value not in (low, high):
            # The API document states a bound as a JSON number, which holds an integer exactly
            # up to 2**53 (FastAPI writes it as a float): a larger one would be stated wrong.
            raise SpecError(
                f"{field}: bound {value} is beyond ±2**53, which the API document cannot state"
                f" exactly; leave it out for the {type_}'s own ({low}..{high})"
            )
        if match.group(1) == ">=":
            ge = value
        else:
            le = value
    if ge is not None and le is not None and ge > le:
        raise SpecError(f"{field}: bounds >={ge},<={le} admit no value")
    return ge, le


def _is_day(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _check_default(field: Field) -> None:
    value, name = field.default, field.name
    if value is None:
        return
    if field.type in ("timestamp", "uuid"):
        raise SpecError(
            f"{name}: a {field.type} takes no default; make it optional ({name}:{field.type}?)"
        )
    if field.type == "bool" and value not in ("true", "false"):
        raise SpecError(f"{name}: default {value!r} is not true or false")
    if field.type in _INTEGER_TYPES:
        low, high = _INTEGER_TYPES[field.type][2]
        if _INTEGER.fullmatch(value) is None:
            raise SpecError(f"{name}: default {value!r} is not an integer")
        ge = low if field.ge is None else field.ge
        le = high if field.le is None else field.le
        if not ge <= int(value) <= le:
            raise SpecError(f"{name}: default {value} is outside its bounds")
    if field.type == "enum" and value not in field.choices:
        raise SpecError(f"{name}: default {value!r} is not one of {'|'.join(field.choices)}")
    if field.type == "date" and (_DATE.fullmatch(value) is None or not _is_day(value)):
        raise SpecError(f"{name}: default {value!r} is not a day, YYYY-MM-DD")
    if field.type in ("str", "text"):
        if field.max_length is not None and len(value) > field.max_length:
            raise SpecError(f"{name}: default {value!r} is longer than {field.max_length}")
        if not value.isprintable() or '"' in value or "\\" in value:
            raise SpecError(f"{name}: default {value!r} must be printable, without quotes")


# The fewest values a unique field may hold: the tests write thousands of rows, and the load test
# seeds 100,000 (loadtest/budget.toml) and creates more, each with a value of its own.
UNIQUE_ROOM = 1_000_000


def _check_room(name: str, type_: str, options: dict[str, object]) -> None:
    """A unique field with too few values for the rows the tests and the load test write."""
    if type_ in ("str", "text") and options["max_length"] == 1:
        raise SpecError(f"{name}: a one-character {type_} has too few values to be unique")
    if type_ in _INTEGER_TYPES:
        low, high = _INTEGER_TYPES[type_][2]
        ge = low if options["ge"] is None else options["ge"]
        le = high if options["le"] is None else options["le"]
        count = int(le) - int(ge) + 1  # type: ignore[call-overload]
        if count < UNIQUE_ROOM:
            raise SpecError(
                f"{name}: a unique {type_} needs bounds {UNIQUE_ROOM:,} values wide at least; "
                f"these hold {count:,}"
            )


def parse_field(text: str) -> Field:
    match = _FIELD.fullmatch(text)
    name = text.partition(":")[0] or text
    if match is None:
        raise SpecError(
            f"{name}: cannot read {text!r}; write name:type[?][=default][:unique][:filter][:sort]"
        )
    name, type_, args = match.group("name"), match.group("type"), match.group("args")
    if SNAKE_CASE.fullmatch(name) is None:
        raise SpecError(f"{name}: a field name is snake_case (e.g. unit_price)")
    if (
        keyword.iskeyword(name)
        or name in RESERVED
        or name in SQL_RESERVED
        or name.startswith("model_")
    ):
        raise SpecError(f"{name}: is a reserved word; pick another name")
    if type_ not in _TYPES:
        raise SpecError(f"{name}: unknown type {type_!r}; one of {', '.join(sorted(_TYPES))}")
    flags = [flag for flag in match.group("flags").split(":") if flag]
    for flag in flags:
        if flag not in FLAGS:
            raise SpecError(f"{name}: unknown flag {flag!r}; one of {', '.join(sorted(FLAGS))}")
    unique = "unique" in flags
    if unique and type_ not in _UNIQUE_TYPES:
        raise SpecError(f"{name}: a {type_} cannot be unique (it has too few values)")
    options: dict[str, object] = {}
    if type_ == "str":
        if args is None or not args.isdigit() or not 1 <= int(args) <= 10_485_760:
            raise SpecError(f"{name}: str needs its length, str(N) with N from 1")
        options["max_length"] = int(args)
    elif type_ == "text":
        if args is not None and (not args.isdigit() or int(args) < 1):
            raise SpecError(f"{name}: text(N) needs N >= 1")
        options["max_length"] = int(args) if args else DEFAULT_TEXT_LENGTH
    elif type_ in _INTEGER_TYPES:
        options["ge"], options["le"] = _bounds(name, type_, args or "")
    elif type_ == "enum":
        choices = tuple((args or "").split("|"))
        bad = [choice for choice in choices if ENUM_VALUE.fullmatch(choice) is None]
        if not args or bad:
            raise SpecError(f"{name}: enum(a|b|...) needs values of letters, digits, _ . -")
        if len(set(choices)) != len(choices):
            raise SpecError(f"{name}: enum lists a value twice")
        options["choices"] = choices
    elif args is not None:
        raise SpecError(f"{name}: {type_} takes no arguments")
    if unique:
        _check_room(name, type_, options)
    field = Field(
        name=name,
        type=type_,
        nullable=match.group("optional") is not None,
        default=match.group("default"),
        unique=unique,
        filter="filter" in flags,
        sort="sort" in flags,
        **options,  # type: ignore[arg-type]
    )
    _check_default(field)
    return field


def parse(spec: str) -> list[Field]:
    """The fields of `spec`, in order; SpecError naming the field for anything wrong."""
    fields = [parse_field(text) for text in spec.split()]
    if not fields:
        raise SpecError("fields: the spec declares no field")
    seen: set[str] = set()
    for field in fields:
        if field.name in seen:
            raise SpecError(f"{field.name}: declared twice")
        seen.add(field.name)
    return fields
