"""A logger for the line written on every request: structlog's configured processors, called
directly.

structlog's `logger.info(...)` goes through a lazy proxy, a bound logger, a level filter, a copy
of the bound context and the call of the chain; for the access line that machinery cost as much
as the chain itself (callgrind, one access line with the request id bound: 57 thousand
instructions through `logger.info`, 32 thousand called directly). `DirectLogger` does what a
bound logger with no bound values does, in one call: the event dict, every processor of the
configured chain in order (`DropEvent` drops the line), the result handed to the wrapped logger's
method of the level. It reads the configuration through structlog's public `get_config()`, once,
as a logger cached on first use does (`cache_logger_on_first_use`): the processor list is the
live one, so a change to it (structlog.testing.capture_logs) applies to the next line.
"""

import logging
from typing import Any

import structlog


class DirectLogger:
    """`info(event, **fields)` as structlog's logger of this name would log it."""

    __slots__ = ("_enabled", "_logger", "_processors")

    def __init__(self, name: str) -> None:
        config = structlog.get_config()
        self._processors: list[Any] = config["processors"]
        self._logger = config["logger_factory"](name)
        self._enabled = structlog.get_logger(name).bind().is_enabled_for(logging.INFO)

    def info(self, event: str, **fields: Any) -> None:
        if not self._enabled:
            return
        logger = self._logger
        event_dict: Any = fields
        event_dict["event"] = event
        try:
            for processor in self._processors:
                event_dict = processor(logger, "info", event_dict)
        except structlog.DropEvent:
            return
        # What the last processor may return, as BoundLoggerBase._process_event takes it.
        if isinstance(event_dict, (str, bytes, bytearray)):
            logger.info(event_dict)
        elif isinstance(event_dict, tuple):
            args, kwargs = event_dict
            logger.info(*args, **kwargs)
        else:
            logger.info(**event_dict)


def direct_logger(name: str) -> DirectLogger | None:
    """The direct logger of `name` for the current configuration; None where the configured
    bound logger cannot say whether it logs info lines (not structlog's filtering one): the
    caller then logs through structlog's logger."""
    try:
        return DirectLogger(name)
    except (AttributeError, KeyError, TypeError):
        return None
