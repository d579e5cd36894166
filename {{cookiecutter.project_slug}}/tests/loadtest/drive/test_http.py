"""The engine's requests: built from the scenario table, byte for byte what it says."""

import json
import random
import re

import pytest
from loadtest.drive.http import build_mix, build_op
from loadtest.plan import scenarios
from loadtest.plan.declared import plural
from loadtest.plan.operations import UNIQUE_DIGITS, Operation, keyed, parts
from loadtest.plan.scenarios import OPERATIONS, SCENARIOS

from ...declared import first_resource

FIRST = plural(first_resource())


def _pattern(template: str) -> str:
    split = parts(template)
    return "".join(re.escape(part) if i % 2 == 0 else r"\d+" for i, part in enumerate(split))


def _parse(request: bytes) -> tuple[str, str, dict[str, str], bytes]:
    head, _, body = request.partition(b"\r\n\r\n")
    line, *fields = head.decode().split("\r\n")
    method, target, version = line.split(" ")
    assert version == "HTTP/1.1"
    headers = dict(field.split(": ", 1) for field in fields)
    return method, target, headers, body


@pytest.mark.parametrize(
    "operation",
    [item for item in OPERATIONS.values() if not item.consumes_id],
    ids=lambda op: op.name,
)
def test_the_engine_sends_each_operation_as_the_table_writes_it(operation: Operation) -> None:
    ids = {operation.resource: [42], "another": [7]}
    request, status = build_op(operation, ids)(random.Random(1))
    method, target, headers, body = _parse(request)
    assert (method, status) == (operation.method, operation.status)
    assert re.fullmatch(_pattern(operation.path), target)
    assert "{id}" not in operation.path or target.endswith(("/42", "after=42"))
    if operation.body is None:
        assert body == b""
        assert "Content-Length" not in headers
    else:
        assert re.fullmatch(_pattern(operation.body), body.decode())
        assert isinstance(json.loads(body), dict)
        assert headers["Content-Type"] == "application/json"
        assert headers["Content-Length"] == str(len(body))


def test_every_request_of_the_engine_carries_the_headers_given() -> None:
    headers = {"X-API-Key": "key-1", "X-Trace": "a"}
    for operation in [item for item in OPERATIONS.values() if not item.consumes_id]:
        request, _ = build_op(operation, {operation.resource: [42]}, headers)(random.Random(1))
        assert _parse(request)[2].items() >= headers.items(), operation.name
    op, rng = build_mix(SCENARIOS[f"{FIRST}.mixed"], {FIRST: [42]}, headers), random.Random(3)
    for method, _, sent, _ in (_parse(op(rng)[0]) for _ in range(50)):
        assert sent.items() >= headers.items(), method


def test_the_engine_refuses_an_operation_that_consumes_its_ids() -> None:
    with pytest.raises(ValueError, match="each id once"):
        build_op(OPERATIONS[f"{FIRST}.delete"], {FIRST: [1]})


def test_the_engine_refuses_an_operation_whose_resource_has_no_seeded_ids() -> None:
    with pytest.raises(ValueError, match="needs seeded ids"):
        build_op(OPERATIONS[f"{FIRST}.by_id"], {"another": [1]})


def test_a_unique_placeholder_renders_a_fresh_number_of_twelve_digits() -> None:
    operation = Operation("t.create", "POST", "/t", 201, '{"code": "{u}"}')
    op, rng = build_op(operation, {}), random.Random(5)
    codes = [json.loads(_parse(op(rng)[0])[3])["code"] for _ in range(1000)]
    assert all(len(code) == UNIQUE_DIGITS and code.isdigit() for code in codes)
    assert len(set(codes)) == len(codes)


def test_a_mix_picks_its_operations_in_proportion_to_their_weights() -> None:
    op, rng = build_mix(SCENARIOS[f"{FIRST}.mixed"], {FIRST: range(1, 1001)}), random.Random(7)
    methods = [_parse(op(rng)[0])[0] for _ in range(20_000)]
    assert methods.count("GET") / len(methods) == pytest.approx(0.8, abs=0.01)
    assert set(methods) == {"GET", "PATCH"}


def test_each_keyed_create_of_the_engine_carries_a_fresh_idempotency_key() -> None:
    create = OPERATIONS[f"{FIRST}.create"]
    op, rng = build_op(keyed(create), {}, {"X-API-Key": "k"}), random.Random(11)
    keys = [_parse(op(rng)[0])[2]["Idempotency-Key"] for _ in range(1000)]
    assert all(re.fullmatch(r"loadtest-\d{24}", key) for key in keys)
    assert len(set(keys)) == len(keys)
    assert "Idempotency-Key" not in _parse(build_op(create, {})(rng)[0])[2]
    by_id = OPERATIONS[f"{FIRST}.by_id"]
    assert keyed(by_id) is by_id


def test_sending_idempotency_keys_keys_every_create_of_the_table_and_nothing_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(scenarios, "OPERATIONS", dict(OPERATIONS))
    # The first resource's create as a scenario, also where a unique field leaves it out.
    create = {f"{FIRST}.create": ((OPERATIONS[f"{FIRST}.create"], 1),)}
    monkeypatch.setattr(scenarios, "SCENARIOS", {**create, **SCENARIOS})
    scenarios.send_idempotency_keys()
    for mix in scenarios.SCENARIOS.values():
        for operation, _ in mix:
            keys = [name for name, _ in operation.headers if name == "Idempotency-Key"]
            assert keys == (["Idempotency-Key"] if operation.method == "POST" else []), mix
    assert scenarios.SCENARIOS[f"{FIRST}.create"][0][0].headers
    assert not OPERATIONS[f"{FIRST}.create"].headers  # the table of other tests is untouched
