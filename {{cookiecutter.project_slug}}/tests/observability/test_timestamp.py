"""observability/logging.py: every line's `timestamp` is RFC 3339 UTC with milliseconds, the time
it was logged."""

import time
from datetime import UTC, datetime

import pytest

from {{ cookiecutter.package_name }}.observability.logging import _UtcTimestamp


def test_the_timestamp_is_rfc3339_utc_with_milliseconds_and_the_time_of_the_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stamp = _UtcTimestamp()
    for instant in (1_767_225_599.9996, 1_767_225_600.0, 1_767_225_600.042, 1_767_225_600.999):
        monkeypatch.setattr(time, "time", lambda instant=instant: instant)
        written = stamp(None, "info", {})["timestamp"]
        expected = datetime.fromtimestamp(instant, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
        assert written == f"{expected}Z"
