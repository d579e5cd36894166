"""wrk's Lua: each operation's request written from the scenario table, the mix by weight."""

import json
import re

from loadtest.drive.wrk import script
from loadtest.plan.declared import plural
from loadtest.plan.headers import ENVIRONMENT
from loadtest.plan.operations import Operation, keyed, parts
from loadtest.plan.scenarios import OPERATIONS, SCENARIOS

from ...declared import first_resource

FIRST = plural(first_resource())


def test_the_wrk_script_requests_each_operation_as_the_table_writes_it() -> None:
    for operation in OPERATIONS.values():
        lua = script(((operation, 1),), low=1, high=9)
        assert f'request = function() return wrk.format("{operation.method}", ' in lua
        # Every request takes the table of headers read from LOADTEST_HEADERS at the start.
        request = next(line for line in lua.splitlines() if line.startswith("request = "))
        table = "json" if operation.body else "plain"
        assert re.search(rf", {table}(, .+)?\) end$", request), request
        for template in filter(None, (operation.path, operation.body)):
            split = parts(template)
            for index, part in enumerate(split):
                if index % 2 == 0 and part:
                    assert json.dumps(part) in lua, (operation.name, part)
        drawn = "values.next()" if operation.consumes_id else "values.id()"
        assert (drawn in lua) == ("{id}" in operation.path)


def test_the_wrk_script_picks_a_mix_by_cumulative_weight() -> None:
    lua = script(SCENARIOS[f"{FIRST}.mixed"], low=1, high=9)
    assert "local total = 100" in lua
    assert 'if pick <= 80 then return wrk.format("GET", ' in lua
    assert 'if pick <= 100 then return wrk.format("PATCH", ' in lua


def test_the_wrk_script_draws_ids_from_the_seeded_range_and_reports_one_json_line() -> None:
    lua = script(SCENARIOS[f"{FIRST}.by_id"], low=11, high=99, delay_ms=10)
    assert "local low, high, next_id = 11, 99, 11" in lua
    assert "delay = function() return 10 end" in lua
    assert "WRK_JSON" in lua


def test_the_wrk_script_reads_the_headers_from_its_environment_not_from_its_text() -> None:
    lua = script(SCENARIOS[f"{FIRST}.mixed"], low=1, high=9)
    assert f'os.getenv("{ENVIRONMENT}")' in lua
    assert "plain[name], json[name] = value, value" in lua


def test_the_wrk_script_draws_a_unique_fields_value_as_twelve_digits() -> None:
    lua = script(((Operation("t.create", "POST", "/t", 201, '{"code": "{u}"}'), 1),), low=1, high=9)
    assert 'u = function() return string.format("%d%06d", math.random(100000, 999999)' in lua
    assert "values.u()" in lua


def test_the_wrk_script_sends_a_keyed_create_with_a_fresh_idempotency_key_per_request() -> None:
    lua = script(((keyed(OPERATIONS[f"{FIRST}.create"]), 1),), low=1, high=9)
    request = next(line for line in lua.splitlines() if line.startswith("request = "))
    key = '{["Idempotency-Key"] = "loadtest-" .. values.u() .. values.u()}'
    assert f"with(json, {key})" in request
    # Each thread its own sequence: the keys of one are not the keys of the next.
    assert 'thread:set("thread_number", threads)' in lua
    assert "math.randomseed(os.time() * 1000 + (thread_number or 0))" in lua
    plain = ((OPERATIONS[f"{FIRST}.create"], 1),)
    assert "Idempotency-Key" not in script(plain, low=1, high=9)
