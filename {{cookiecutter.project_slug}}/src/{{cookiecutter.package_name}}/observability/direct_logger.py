"""A logger for the line written on every request: structlog's configured processors, called
directly.

structlog's `logger.info(...)` goes through a lazy proxy, a bound logger, a level filter, a copy
of the bound context and the call of the chain; for the access line that machinery cost as much
as the chain itself (callgrind, one access line with the request id bound: 57 thousand
instructions through `logger.info`, 32 thousand called directly). `DirectLogger` does what a
bound logger with no bound values does, in one call: the event dict, every processor of the
configured chain in order (`DropEvent` drops the line), the result handed to the wrapped logger's
method of the level.

It follows the configuration as a logger made afresh for each line would: structlog's public
`get_config()` is read on every line, and the chain, the wrapped logger and the level are taken
again whenever the configuration names other ones (a test's `structlog.configure`, an app made
after another); the processor list is the live one, so a change made to it in place
(`structlog.testing.capture_logs`) applies to the next line. A configured bound logger that cannot
say whether it logs info lines (not structlog's filtering one) sends every line through
structlog's own logger: the plain path.
"""

import logging
from typing import Any

import structlog
from structlog import get_config


class DirectLogger:
    """`info(event, **fields)` as structlog's logger of this name would log it."""

    __slots__ = ("_enabled", "_factory", "_logger", "_name", "_processors", "_wrapper")

    def __init__(self, name: str) -> None:
        self._name = name
        self._processors: Any = None
        self._factory: Any = None
        self._wrapper: Any = None
        self._logger: Any = None
        self._enabled: bool | None = None

    def _changed(self, config: dict[str, Any]) -> bool:
        return (
            config["processors"] is not self._processors
            or config["logger_factory"] is not self._factory
            or config["wrapper_class"] is not self._wrapper
        )

    def _follow(self, config: dict[str, Any]) -> None:
        """Take the chain, wrapped logger and level of this configuration."""
        self._processors = config["processors"]
        self._factory = config["logger_factory"]
        self._wrapper = config["wrapper_class"]
        self._logger = self._factory(self._name)
        bound = structlog.get_logger(self._name).bind()
        # Of the class: structlog's generic bound logger answers any name, passing it on.
        is_enabled_for = getattr(type(bound), "is_enabled_for", None)
        self._enabled = is_enabled_for(bound, logging.INFO) if callable(is_enabled_for) else None

    def info(self, event: str, **fields: Any) -> None:
        config = get_config()
        if (  # as _changed, inline: this runs on every request
            config["processors"] is not self._processors
            or config["logger_factory"] is not self._factory
            or config["wrapper_class"] is not self._wrapper
        ):
            self._follow(config)
        if self._enabled is None:  # a bound logger of another kind: structlog's own path
            structlog.get_logger(self._name).info(event, **fields)
            return
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

    @property
    def direct(self) -> bool:
        """Whether lines are written directly under the current configuration (else structlog's
        own logger writes them)."""
        config = get_config()
        if self._changed(config):
            self._follow(config)
        return self._enabled is not None
