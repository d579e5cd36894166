"""Random option sets a user may bake: field specs the bake's hook accepts, with every type,
bounds, `?`, `=default`, `:unique`, `:filter` and `:sort`, names near reserved words, one field or
many, an enum first or no integer field; crossed with `auth`, `jobs` and the resource's names.

Each is drawn by construction and then held to the generator's own rules (scaffold/spec.py and
scaffold/names.py, read from the template as the hook reads them), so that every option set drawn
is one the hook accepts."""

import string
import sys
from dataclasses import dataclass, field
from datetime import date

from hypothesis import assume
from hypothesis import strategies as st

from .baking import TEMPLATE

sys.path.insert(0, str(TEMPLATE / "{{cookiecutter.project_slug}}"))
from scaffold.names import resource_name_problems
from scaffold.spec import SpecError, parse

sys.path.pop(0)

# Names one letter away from a reserved one, or shadowing a name of Python, pydantic, FastAPI,
# SQL or a query parameter of the list route (the reserved ones themselves are refused).
NEAR_RESERVED = (
    "ids", "id_code", "version_no", "created", "updated_on", "afters", "limits", "sorted",
    "sort_key", "cursor_pos", "body_text", "fields_set", "model", "schema", "type", "list",
    "dict", "format", "hash", "next", "filter", "count", "total", "items", "keys", "values",
    "copy", "json", "data", "next_after", "next_cursor", "errors", "detail", "status", "title",
    "etag", "request", "response", "settings", "connection", "database", "self", "cls",
    "profile", "order_no", "user_name", "table_no", "default_value", "key", "value", "name",
    "kind", "code", "created_by", "gte", "lte", "row", "rows", "page", "query", "path",
    # Key words PostgreSQL does not reserve but quotes in what it writes back (pg_get_indexdef).
    "position", "time", "between", "exists", "none", "trim", "real", "interval",
    # The names of the rows the resource's statements build their answers from (sql.py, keyset).
    "new", "one", "changed", "stored", "gone", "found", "last", "parts", "value",
)  # fmt: skip
RESOURCES = (
    ("item", "items"), ("product", "products"), ("line_item", "line_items"),
    ("box", "boxes"), ("person", "people"), ("status", "statuses"), ("order_item", "order_items"),
    ("user_account", "user_accounts"), ("test_case", "test_cases"), ("datum", "data"),
    ("kit_part", "kit_parts"), ("select_option", "select_options"), ("event", "events"),
)  # fmt: skip
_SNAKE = r"[a-z][a-z0-9]{0,7}(_[a-z0-9]{1,5}){0,2}"
# What a default may hold: printable, no space (the spec is split on it), no quote or backslash
# (the hook refuses them), no colon (it starts a flag), no braces (cookiecutter renders Jinja).
_DEFAULT_TEXT = st.text(
    alphabet=st.sampled_from(
        sorted(set(string.ascii_letters + string.digits + string.punctuation) - set('"\\:{}'))
    ),
    min_size=1,
    max_size=12,
)
_INTEGER_RANGES = {"int": (-(2**31), 2**31 - 1), "bigint": (-(2**63), 2**63 - 1)}
_INTEGER_RANGES["money"] = (0, 2**63 - 1)


@dataclass(frozen=True)
class OptionSet:
    fields: str
    auth: str = "none"
    jobs: str = "none"
    resource: str = "item"
    resource_plural: str = "items"
    extra: dict[str, str] = field(default_factory=dict)

    def context(self) -> dict[str, str]:
        names = {"resource": self.resource, "resource_plural": self.resource_plural}
        return {"fields": self.fields, "auth": self.auth, "jobs": self.jobs, **names, **self.extra}


def _bounds(draw: st.DrawFn, kind: str) -> tuple[str, int | None, int | None]:
    low, high = _INTEGER_RANGES[kind]
    edges = st.sampled_from([low, high, 0, -1, 1, 10**6, -(10**6)]).filter(
        lambda value: low <= value <= high
    )
    ge = draw(st.none() | edges | st.integers(low, high))
    le = draw(st.none() | edges | st.integers(low, high))
    if ge is not None and le is not None and ge > le:
        ge, le = le, ge
    written = ",".join(
        [*([f">={ge}"] if ge is not None else []), *([f"<={le}"] if le is not None else [])]
    )
    return (f"({written})" if written else ""), ge, le


@st.composite
def field_spec(draw: st.DrawFn, name: str, kind: str) -> str:
    """One field of `kind` named `name`: its type with arguments, then `?`, `=default`, flags."""
    args, default = "", None
    if kind == "str":
        length = draw(st.integers(1, 12) | st.integers(13, 400) | st.sampled_from([10_485_760]))
        args = f"({length})"
        default = draw(st.none() | _DEFAULT_TEXT.filter(lambda text: len(text) <= length))
    elif kind == "text":
        most = draw(st.none() | st.integers(1, 40) | st.integers(41, 100_000))
        args = "" if most is None else f"({most})"
        default = draw(st.none() | _DEFAULT_TEXT.filter(lambda text: len(text) <= (most or 10_000)))
    elif kind in _INTEGER_RANGES:
        args, ge, le = _bounds(draw, kind)
        low = ge if ge is not None else _INTEGER_RANGES[kind][0]
        high = le if le is not None else _INTEGER_RANGES[kind][1]
        default = draw(st.none() | st.integers(low, high).map(str))
    elif kind == "bool":
        default = draw(st.none() | st.sampled_from(["true", "false"]))
    elif kind == "date":
        days = st.dates(date(1, 1, 1), date(9999, 12, 31)).map(date.isoformat)
        written_like_one = st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", fullmatch=True)
        default = draw(st.none() | days | written_like_one)
    elif kind == "enum":
        choices = draw(
            st.lists(
                st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,9}", fullmatch=True),
                min_size=1, max_size=5, unique=True,
            )
        )  # fmt: skip
        args = f"({'|'.join(choices)})"
        default = draw(st.none() | st.sampled_from(choices))
    optional = "?" if draw(st.booleans()) else ""
    flags = [flag for flag in ("unique", "filter", "sort") if draw(st.booleans())]
    written = f"{name}:{kind}{args}{optional}"
    written += f"={default}" if default is not None else ""
    return written + "".join(f":{flag}" for flag in flags)


def _to_the_limit(table: str) -> str:
    """A field name as long as the table lets it be: its index, <table>_<name>_id_idx, is as
    long as a name PostgreSQL keeps (63 bytes)."""
    length = 63 - len(f"{table}__id_idx")
    name = ("long_" * 13)[: length - 1].rstrip("_")
    return name + "x" * (length - len(name))


@st.composite
def field_specs(draw: st.DrawFn, table: str) -> str:
    """A line of one to five fields of the table, each spec the hook accepts; an enum first or
    no integer field as often as not."""
    count = draw(st.integers(1, 5))
    names = draw(
        st.lists(
            (
                st.integers(0, 9).flatmap(  # one name in ten as long as it can be
                    lambda tenth: (
                        st.just(_to_the_limit(table))
                        if tenth == 7  # not 0, the value Hypothesis favours
                        else st.sampled_from(NEAR_RESERVED) | st.from_regex(_SNAKE, fullmatch=True)
                    )
                )
            ).filter(
                lambda name: _accepted(f"{name}:bool")  # not a reserved word itself
            ),
            min_size=count, max_size=count, unique=True,
        )
    )  # fmt: skip
    kinds = ["str", "text", "int", "bigint", "money", "bool", "date", "timestamp", "uuid", "enum"]
    if draw(st.booleans()):
        kinds = [kind for kind in kinds if kind not in _INTEGER_RANGES]  # no integer field
    chosen = [draw(st.sampled_from(kinds)) for _ in names]
    if draw(st.booleans()):
        chosen[0] = "enum"  # an enum first
    fields = []
    for name, kind in zip(names, chosen, strict=True):
        fields.append(draw(field_spec(name, kind).filter(_accepted)))
    spec = " ".join(fields)
    assume(_accepted(spec))
    return spec


def _accepted(spec: str) -> bool:
    try:
        parse(spec)
    except SpecError:
        return False
    return True


@st.composite
def option_sets(draw: st.DrawFn) -> OptionSet:
    # Hypothesis runs its all-simplest example first; with the few examples of `make test`, that
    # would spend one on the same spec every time. Refused here at no cost (no bake), it leaves
    # every example to the seed; shrinking steps over it.
    assume(draw(st.integers(0, 2**16)) != 0)
    singular, plural = draw(
        st.sampled_from(RESOURCES)
        | st.from_regex(_SNAKE, fullmatch=True).map(lambda name: (name, f"{name}s"))
    )
    assume(not resource_name_problems(singular, plural) and plural != "inventory_service")
    return OptionSet(
        fields=draw(field_specs(plural)),
        auth=draw(st.sampled_from(["none", "api_key", "jwt"])),
        jobs=draw(st.sampled_from(["none", "postgres"])),
        resource=singular,
        resource_plural=plural,
    )
