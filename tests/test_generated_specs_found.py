"""Every option set the property test (tests/test_generated_specs.py) found failing, each fixed
since, as a named case run every time: baked the README's way, finished as `make install`
finishes it, its `make lint`, then the tests it failed (`make test-matrix`: its whole suite). A
file of its own, so that `make test` runs it beside the property test's examples, not after them.
"""

import os
from pathlib import Path

import pytest

from .readme_way import bake_readme_way, finish, lint_and_test, make
from .specs import OptionSet

# FOUND's whole suites, not only the tests that failed (make test-matrix).
FOUND_IN_FULL = os.environ.get("SPECS_FOUND_IN_FULL") == "1"

# Every option set the property test found failing, as it was drawn, with what it failed (the
# bake's `make lint` runs for each); each fixed since. Those the hook now refuses are among the
# refused option sets of tests/test_generation.py (a field named `copy`, a default `8326-90-96`,
# a money bound of 2**55: FastAPI states bounds as floats, exact to 2**53).
FOUND: dict[str, tuple[OptionSet, tuple[str, ...]]] = {
    # Laid out without ruff at the bake: imports out of order, lines that ruff joins or splits
    # (now laid out by `make install`).
    "long-resource-name-laid-out-at-install": (
        OptionSet(
            "owx42_i4:uuid:unique smz:timestamp?:unique:sort",
            resource="mdxgc_yawh_6b2y",
            resource_plural="mdxgc_yawh_6b2ys",
        ),
        (),
    ),
    "one-letter-resource-laid-out-at-install": (
        OptionSet(
            "zx7_v:text(423)?:filter gbffuc78_6:text?:unique:filter"
            " next_cursor:money(<=1000000)?=70922:unique:sort",
            resource="k",
            resource_plural="ks",
        ),
        (),
    ),
    # No required field: `{}` is a whole create, which the dispatch's comparison sent as a 422.
    "no-required-field": (
        OptionSet(
            "path:bool?:filter",
            auth="api_key",
            jobs="postgres",
            resource="kit_part",
            resource_plural="kit_parts",
        ),
        ("tests/kit/test_dispatch.py",),
    ),
    # A string longer than a body may be (too long: the body limit's 413 first; its longest value
    # cannot be sent), and a bool named like the page's `next_after` (True equalled its 1).
    "line-longer-than-a-body-and-a-field-named-next-after": (
        OptionSet(
            "hl_sv20:enum(62rakMLGn1|P|nrRif)=62rakMLGn1:filter filter:str(10485760)"
            " next_after:bool=true:filter qwa8_mg92t:enum(4y|j-DS0c3rRF|E.M3xZq_Ac|0dS|5UTlTHgQaR)?"
            " status:timestamp?:filter:sort",
            auth="jwt",
            resource="h_0d",
            resource_plural="h_0ds",
        ),
        (
            "tests/bad_input/test_bodies.py",
            "tests/kit/test_param_reader.py",
            "tests/h_0ds/test_schemas.py",
        ),
    ),
    # Its models (TestCaseFields, TestCaseQuery...) were collected as test classes, a warning
    # the suite turns into an error (pytest's python_classes is now empty in the bake).
    "a-resource-named-test-case": (
        OptionSet(
            "fields_set:enum(f747mf3vLr|aIJ4|C|V3Z9r-7XDZ|Osvf)",
            auth="jwt",
            jobs="postgres",
            resource="test_case",
            resource_plural="test_cases",
        ),
        ("tests/test_cases",),
    ),
    # A resource folder named like a unit: the bake's reference check took a docstring's
    # "us/request" (microseconds) for a path into tests/us/.
    "a-resource-named-like-a-unit": (
        OptionSet("label:str(40)", resource="u", resource_plural="us"),
        ("tests/test_references.py",),
    ),
    # `{}` a whole create whose unique field takes its default: the body-limit test of
    # test_dispatch_changed_app.py sent `{}` under the limit three times (the dispatch's answer
    # and FastAPI's twice), a 201 then 409s, so the answers differed; it sends a list now.
    "a-unique-field-with-a-default-and-none-required": (
        OptionSet("code:str(20)=abc:unique"),
        ("tests/kit/test_dispatch_changed_app.py",),
    ),
    # A default holding a `'` (the spec refuses `"` and `\` only): its schema's Python quoted
    # it with `"` on both sides and inside, a syntax error at `make install`'s layout. Then, no
    # field required: the tracing test's refused create, `{}`, was a create (201, then a 409).
    "a-default-holding-a-single-quote": (
        OptionSet(
            "j27:bigint(<=9223372036854775807)?:sort"
            " next_cursor:str(10485760)?=q!,z'YRub_<E:unique:sort",
            auth="api_key",
            resource="w5_lhj_rmw60",
            resource_plural="w5_lhj_rmw60s",
        ),
        ("tests/observability/test_tracing.py",),
    ),
    # One possible body (an enum of one choice, with its default): the idempotency test's
    # "another body" was the same body, a replay (201) where it expected a 422.
    "an-enum-of-one-choice-alone": (
        OptionSet(
            "z1_adhgu_pq:enum(PAwKg-5)=PAwKg-5:filter:sort",
            auth="jwt",
            resource="event",
            resource_plural="events",
        ),
        ("tests/kit/test_idempotency.py",),
    ),
    # A unique date, which the load test's create writes as the example (2026-01-31): the
    # scenario test's row kept it, and the repository test's create of that day met a 409. The
    # enum's default omitted: the dispatch comparison masked it where the other body sent it.
    "a-unique-date-and-an-enum-default": (
        OptionSet(
            "created_by:enum(NS|h-|0|lNx30x0|6.Djp)=6.Djp format:date=0235-09-17:unique:sort",
            resource="test_case",
            resource_plural="test_cases",
        ),
        (
            "tests/loadtest/plan/test_scenarios.py",
            "tests/test_cases/test_repository.py",
            "tests/kit/test_param_reader.py",
        ),
    ),
    # No required field, the first one unique with a default: the dispatch comparison's create
    # without a required field left out the first field instead, whose default the first app's
    # create took, and the other app's met a 409. It is left out where no field is required.
    "no-required-field-and-a-unique-default-first": (
        OptionSet(
            "data:bigint(<=-1000000)=-30672849:unique:sort self:str(2)?:unique:sort"
            " b_1rxq:str(335)?:unique:filter",
            resource="person",
            resource_plural="people",
        ),
        ("tests/kit/test_param_reader.py",),
    ),
    # A field named with a key word PostgreSQL does not reserve (row), marked :sort: the drift
    # test read its index's definition for `(row, id)`, where PostgreSQL writes `("row", id)`.
    "a-field-named-with-a-key-word-postgresql-quotes": (
        OptionSet(
            "row:enum(nzR1hH6zl|tfszK1UFmT|T|PGomnwvpgE|TdZiUKLBdL):sort e7b_w_u:text:unique"
            " hcmjp2:enum(i4j|N0Gvi|qA.VEevl9a|oyCmjYXy)=qA.VEevl9a:sort profile:timestamp:unique",
            auth="api_key",
            resource="aacm3hzu",
            resource_plural="aacm3hzus",
        ),
        ("tests/test_drift.py",),
    ),
    # A field named `page`, the name of the row the list's statement aggregates: PostgreSQL took
    # `json_agg(page ...)` for the column, and the list answered a list of uuids (now `page.*`).
    "a-field-named-like-the-row-a-statement-answers": (
        OptionSet(
            "f7643ljf:str(2):unique:filter:sort sxrt_g1rmc:date?:unique page:uuid:filter z2t:bool?"
            " interval:bool?=false:filter",
            jobs="postgres",
            resource="event",
            resource_plural="events",
        ),
        ("tests/events/test_listing.py",),
    ),
    # Its one field unique, optional and too short for a fresh value: the load test's patch sent
    # the field's example to every row (409s from the second on), and the row it was written to
    # kept it for the scenario test's create to meet. Where every field is unique, a patch now
    # sends a fresh value, else null.
    "every-field-unique-with-no-room-for-a-fresh-value": (
        OptionSet(
            "value:str(5)?=U_Z:unique:filter",
            auth="api_key",
            jobs="postgres",
            resource="rjzz",
            resource_plural="rjzzs",
        ),
        ("tests/loadtest/drive/test_database.py", "tests/loadtest/plan/test_scenarios.py"),
    ),
}


@pytest.mark.parametrize("name", list(FOUND))
def test_an_option_set_found_failing_bakes_lints_and_passes(
    name: str, readme_cookiecutter: Path, postgres_url: str, tmp_path: Path
) -> None:
    options, failed = FOUND[name]
    project = bake_readme_way(readme_cookiecutter, tmp_path, **options.context())
    finish(project)
    if not failed and not FOUND_IN_FULL:  # its lint failed: `make lint` alone
        linted = make(project, "lint")
        assert linted.returncode == 0, linted.stdout[-5000:] + linted.stderr[-2000:]
        return
    lint_and_test(project, postgres_url, *(() if FOUND_IN_FULL else failed))
