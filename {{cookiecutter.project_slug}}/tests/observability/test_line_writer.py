"""observability/line_writer.py: informational lines in batches, warnings at once."""

import asyncio
import io

from {{ cookiecutter.package_name }}.observability.line_writer import (
    BATCH_LINES,
    FLUSH_SECONDS,
    BatchedLineWriter,
)


class _CountingStream(io.BytesIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, data: bytes) -> int:  # type: ignore[override]
        self.writes += 1
        return super().write(data)


async def test_lines_logged_meanwhile_go_out_in_one_write_after_the_delay() -> None:
    stream = _CountingStream()
    writer = BatchedLineWriter(stream)
    for number in range(10):
        writer.info(b"line %d" % number)
    assert stream.writes == 0
    await asyncio.sleep(FLUSH_SECONDS * 2)  # the flush is a timer: waiting for it is the point
    assert stream.writes == 1
    assert stream.getvalue().splitlines() == [b"line %d" % number for number in range(10)]


async def test_a_full_batch_is_written_without_waiting() -> None:
    stream = _CountingStream()
    writer = BatchedLineWriter(stream)
    for _ in range(BATCH_LINES):
        writer.info(b"x")
    assert stream.writes == 1


async def test_a_warning_is_written_at_once_after_the_lines_before_it() -> None:
    stream = _CountingStream()
    writer = BatchedLineWriter(stream)
    writer.info(b"before")
    writer.error(b"failure")
    assert stream.getvalue() == b"before\nfailure\n"


def test_without_an_event_loop_each_line_is_written_at_once() -> None:
    stream = _CountingStream()
    BatchedLineWriter(stream).info(b"start-up line")
    assert stream.getvalue() == b"start-up line\n"
