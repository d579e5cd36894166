"""Write log lines to a binary stream with one write per event-loop turn, not one per line.

A flush per line is one `write` syscall per request for the access log alone. Lines logged while
the loop runs are collected and written together by a callback scheduled for the end of the
current loop turn: nothing waits on a timer, and a line is out before the loop next sleeps.
Outside a running loop (start-up, shutdown, a script) each line is written at once.
"""

import asyncio
from typing import BinaryIO


class LoopBatchedWriter:
    """A structlog logger (`msg(bytes)`) that batches lines per event-loop turn."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._pending: list[bytes] = []

    def msg(self, line: bytes) -> None:
        if self._pending:
            self._pending.append(line)
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._write([line])
            return
        self._pending.append(line)
        loop.call_soon(self.flush)

    # structlog calls the method named after the level; every level is a line.
    debug = info = warning = warn = error = critical = exception = fatal = log = msg

    def flush(self) -> None:
        pending, self._pending = self._pending, []
        if pending:
            self._write(pending)

    def _write(self, lines: list[bytes]) -> None:
        self._stream.write(b"\n".join(lines) + b"\n")
        self._stream.flush()
