"""Write log lines to a binary stream in batches: one `write` per batch, not one per line.

A flush per line is one `write` syscall per request for the access log alone; under load at
most one request finishes per event-loop turn, so batching by turn saves nothing (strace: three
writes per request, one of them the log line). Informational lines (the access log) are kept for
at most FLUSH_SECONDS, or until BATCH_LINES are waiting; a warning or an error is written at
once, with whatever waits before it, so that nothing that explains a crash sits in memory. Lines
still waiting when the process exits are written by an exit hook, or by the server's own last
records (logging.py); only a SIGKILL loses them.
"""

import asyncio
import atexit
import contextlib
from typing import BinaryIO

FLUSH_SECONDS = 0.1
BATCH_LINES = 256


class BatchedLineWriter:
    """A structlog logger: `info(line)` and the other level methods take the rendered bytes."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._pending: list[bytes] = []
        self._timer: asyncio.TimerHandle | None = None
        atexit.register(self._flush_at_exit)

    def info(self, line: bytes) -> None:
        self._pending.append(line)
        if len(self._pending) >= BATCH_LINES:
            self.flush()
        elif self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no event loop (start-up, a script): nothing to batch with
                self.flush()
                return
            self._timer = loop.call_later(FLUSH_SECONDS, self.flush)

    def warning(self, line: bytes) -> None:
        self._pending.append(line)
        self.flush()

    # structlog calls the method named after the level of the line.
    debug = msg = info
    warn = error = critical = exception = fatal = warning

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._pending:
            lines, self._pending = self._pending, []
            self._stream.write(b"\n".join(lines) + b"\n")
            self._stream.flush()

    def _flush_at_exit(self) -> None:
        # The stream may be closed by then (a test harness's capture): nothing left to do.
        with contextlib.suppress(ValueError, OSError):
            self.flush()
