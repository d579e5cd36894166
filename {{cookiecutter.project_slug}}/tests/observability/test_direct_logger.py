"""observability/direct_logger.py: the access line called through the configured chain directly is
the line structlog's own logger writes, byte for byte, in production and in development, at every
level, under capture_logs, after the configuration changed, and with a bound logger of another
kind."""

import io
import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from structlog.contextvars import bound_contextvars
from structlog.testing import capture_logs

from {{ cookiecutter.package_name }}.observability.direct_logger import DirectLogger
from {{ cookiecutter.package_name }}.observability.logging import configure_logging
from {{ cookiecutter.package_name }}.serving.middleware.edge.access_log import AccessLog
from {{ cookiecutter.package_name }}.settings import Settings

FIELDS: dict[str, Any] = {
    "method": "GET",
    "route": "/items/{item_id}",
    "status": 200,
    "duration_ms": 1.234,
    "client": "127.0.0.1",
}


@pytest.fixture
def restored() -> Iterator[None]:
    """structlog's and the root logger's configuration as they were before the test."""
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    structlog.configure(**saved)
    root.handlers[:], root.level = handlers, level


def _configured(settings: Settings, **changes: Any) -> io.BytesIO | io.StringIO:
    """Logging configured as the service does it; the stream its lines now go to."""
    configure_logging(settings.model_copy(update=changes))
    factory = structlog.get_config()["logger_factory"]
    if changes.get("app_env") == "dev":
        text = io.StringIO()
        structlog.configure(logger_factory=structlog.WriteLoggerFactory(text))
        return text
    binary = io.BytesIO()
    factory("access")._stream = binary  # the batching writer every logger shares
    return binary


def _both_ways(stream: io.BytesIO | io.StringIO) -> tuple[Any, Any]:
    """The access line written by structlog's logger, then by the direct one, same instant."""
    written = []
    with bound_contextvars(request_id="0123456789abcdef0123456789abcdef"):
        for logger in (structlog.get_logger("access"), DirectLogger("access")):
            logger.info("request", **FIELDS)  # no event loop here: the writer writes it at once
            written.append(stream.getvalue())
            stream.seek(0)
            stream.truncate()
    return written[0], written[1]


@pytest.mark.parametrize("app_env", ["prod", "dev"])
def test_the_direct_line_is_the_line_structlogs_logger_writes(
    settings: Settings, app_env: str, restored: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = _configured(settings, app_env=app_env, log_level="info")
    monkeypatch.setattr(time, "time", lambda: 1_767_225_600.042)  # one timestamp for both
    through_structlog, direct = _both_ways(stream)
    assert through_structlog, "structlog's logger wrote a line: the comparison compares lines"
    assert direct == through_structlog


def test_above_info_neither_writes_the_line(settings: Settings, restored: None) -> None:
    stream = _configured(settings, app_env="prod", log_level="warning")
    assert _both_ways(stream) == (b"", b"")


def test_a_line_capture_logs_takes_or_a_processor_drops_is_taken_or_dropped_alike(
    settings: Settings, restored: None
) -> None:
    _configured(settings, app_env="prod", log_level="info")
    direct = DirectLogger("access")  # made before the capture, as the app's is
    with capture_logs() as captured:
        direct.info("request", **FIELDS)
        structlog.get_logger("access").info("request", **FIELDS)
    assert len(captured) == 2
    assert captured[0] == captured[1]


def test_a_direct_logger_made_before_a_reconfiguration_writes_where_the_new_one_says(
    settings: Settings, restored: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _configured(settings, app_env="prod", log_level="info")
    direct = DirectLogger("access")  # the app's, made at start-up
    direct.info("request", **FIELDS)
    stream = _configured(settings, app_env="prod", log_level="info")  # a new chain and writer
    monkeypatch.setattr(time, "time", lambda: 1_767_225_600.042)
    direct.info("request", **FIELDS)
    written = stream.getvalue()
    structlog.get_logger("access").info("request", **FIELDS)
    assert written, "the line went to the writer of the configuration of now"
    assert stream.getvalue() == written * 2


def test_the_access_log_writes_directly_and_a_bound_logger_of_another_kind_writes_plainly(
    settings: Settings, restored: None
) -> None:
    _configured(settings, app_env="prod", log_level="info")
    assert isinstance(AccessLog()._logger, DirectLogger)
    assert AccessLog()._logger.direct
    # A bound logger that cannot say whether it logs info: structlog's own logger, the plain path.
    structlog.configure(wrapper_class=structlog.BoundLogger)
    assert not AccessLog()._logger.direct
    with capture_logs() as captured:
        AccessLog()._logger.info("request", **FIELDS)
    assert [entry["event"] for entry in captured] == ["request"]
