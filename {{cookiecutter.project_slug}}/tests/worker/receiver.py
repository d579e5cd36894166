"""A local HTTP receiver of webhook events, in a thread: records each delivery, checks its
signature, and answers as a test tells it (a status, or a pause before answering)."""

import hashlib
import hmac
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Delivery:
    event_id: str
    body: bytes
    signed: bool
    at: float


@dataclass
class Receiver:
    secret: bytes
    url: str = ""
    status: int = 200
    hold_seconds: float = 0.0  # answer each delivery this long after it arrives
    deliveries: list[Delivery] = field(default_factory=list)
    in_flight: int = 0  # deliveries arrived and not yet answered
    most_in_flight: int = 0
    arrived: threading.Condition = field(default_factory=threading.Condition)

    def record(self, event_id: str, body: bytes, signature: str) -> None:
        expected = "sha256=" + hmac.new(self.secret, body, hashlib.sha256).hexdigest()
        delivery = Delivery(event_id, body, hmac.compare_digest(expected, signature), time.time())
        with self.arrived:
            self.deliveries.append(delivery)
            self.arrived.notify_all()

    def event_ids(self) -> set[str]:
        """What the receiver acts on: each idempotency key once."""
        with self.arrived:
            return {delivery.event_id for delivery in self.deliveries}

    def wait_for(self, count: int, timeout: float, *, distinct: bool = False) -> bool:
        """True once `count` deliveries (distinct event ids if `distinct`) arrived in time."""

        def enough() -> bool:
            seen = len(self.event_ids()) if distinct else len(self.deliveries)
            return seen >= count

        with self.arrived:
            return self.arrived.wait_for(enough, timeout)


@contextmanager
def receiving(secret: bytes) -> Iterator[Receiver]:
    receiver = Receiver(secret)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            with receiver.arrived:
                receiver.in_flight += 1
                receiver.most_in_flight = max(receiver.most_in_flight, receiver.in_flight)
            receiver.record(
                self.headers["Idempotency-Key"], body, self.headers.get("X-Signature", "")
            )
            if receiver.hold_seconds:
                time.sleep(receiver.hold_seconds)
            with receiver.arrived:
                receiver.in_flight -= 1
            self.send_response(receiver.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/events"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
