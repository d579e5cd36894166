"""observability/redaction.py: a secret never reaches a log line, whatever shape the line has."""

import json

import orjson

from {{ cookiecutter.package_name }}.observability.redaction import MASK, RedactSecrets


def test_redaction_masks_an_orjson_rendered_bytes_line() -> None:
    line = orjson.dumps(
        {
            "event": "connect failed for postgresql://app:hunter2@db:5432/x",
            "other": "postgres://other:pa55@host/db",
            "exception": "Traceback...\nOSError: password hunter2 rejected",
            "count": 3,
        }
    )
    masked = RedactSecrets(["hunter2"])(None, "error", line)
    assert isinstance(masked, bytes)
    assert b"hunter2" not in masked
    assert b"pa55" not in masked
    event = orjson.loads(masked)
    assert event["event"] == "connect failed for postgresql://app:***@db:5432/x"
    assert event["count"] == 3
    assert MASK in event["exception"]


def test_redaction_masks_a_secret_in_a_bytes_line_with_no_url() -> None:
    line = orjson.dumps({"event": "login failed", "detail": "password hunter2 rejected"})
    masked = RedactSecrets(["other", "hunter2"])(None, "error", line)
    assert orjson.loads(masked)["detail"] == f"password {MASK} rejected"


def test_redaction_masks_a_rendered_json_line_without_breaking_it() -> None:
    password = 'p"w\\d'
    line = json.dumps(
        {"event": "x", "dsn": f"postgresql://app:{password}@db/x", "pw": password, "email": "a@b.c"}
    )
    masked = RedactSecrets([password])(None, "info", line)
    assert isinstance(masked, str)
    assert password not in masked
    assert json.loads(masked) == {
        "event": "x",
        "dsn": "postgresql://app:***@db/x",
        "pw": MASK,
        "email": "a@b.c",
    }
