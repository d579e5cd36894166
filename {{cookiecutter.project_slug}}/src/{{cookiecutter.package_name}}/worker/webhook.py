"""The `webhook` job: one event POSTed to WEBHOOK_URL, signed, retried with backoff.

The body is the event as enqueued ({"id", "type", "data"}), with two headers: `X-Signature:
sha256=<hex>`, the HMAC-SHA256 of the body with WEBHOOK_SECRET, and `Idempotency-Key: <event
id>`. A job can run twice (its worker killed between the POST and recording it as done): the
receiver keeps the keys it has seen and answers a repeat without acting on it again.

Only a 2xx is a delivery, and the status alone is the receiver's answer: of its body a few KB are
read and dropped (so that the connection carries the next event), never more. A 5xx, a 429, a 408,
a redirect (3xx: the client does not follow it, and a receiver that moved must be told, not
silently lose every event), a status line not received within WEBHOOK_TIMEOUT_SECONDS or a
connection error is retried after WEBHOOK_RETRY_SECONDS, doubled for
each attempt up to WEBHOOK_RETRY_MAX_SECONDS; after WEBHOOK_MAX_ATTEMPTS deliveries, or at once on
another 4xx (the receiver refuses this event), the job is held with status `failed`
(`make jobs-failed` lists them, `make jobs-requeue` runs one again). Each failed delivery is a log
line with the receiver's status.
"""

import asyncio
import hashlib
import hmac
from datetime import timedelta

import httpx
import orjson
import structlog
from pgqueuer.errors import RetryRequested
from pgqueuer.models import Job

from ..settings import Settings

logger = structlog.get_logger(__name__)

SIGNATURE = "X-Signature"
IDEMPOTENCY_KEY = "Idempotency-Key"
# What is read of a receiver's body, as it came (not decompressed), then dropped: an answer this
# small leaves the connection to the next delivery; a longer one is cut and its connection
# closed. httpx reads a body whole, and decompresses it: a receiver's 64 MiB answer, or a
# compressed one that inflates to gigabytes, was held in the worker's memory.
_BODY_BYTES_READ = 64 * 1024
# Statuses that ask for the event again later: overloaded, out of time waiting for the request.
_RETRIED_4XX = frozenset({408, 429})


class DeliveryFailed(Exception):
    """The event is not delivered and will not be retried: its job is held as failed."""


def signature(secret: bytes, body: bytes) -> str:
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def backoff(settings: Settings, attempts: int) -> timedelta:
    """The wait before the next delivery, after `attempts` failed ones (1, 2, 4 ... seconds)."""
    seconds = settings.webhook_retry_seconds * 2 ** max(attempts - 1, 0)
    return timedelta(seconds=min(seconds, settings.webhook_retry_max_seconds))


def _retry_or_fail(
    settings: Settings, job: Job, reason: str, status: int | None = None
) -> Exception:
    attempts = job.attempts + 1  # this one included: pgqueuer counts the retries before it
    held = attempts >= settings.webhook_max_attempts
    delay = backoff(settings, attempts)
    logger.warning(
        "event_not_delivered",
        job_id=job.id,
        attempt=attempts,
        status=status,
        reason=reason,
        **({"held_as_failed": True} if held else {"retry_in": delay.total_seconds()}),
    )
    if held:
        return DeliveryFailed(f"{reason}; {attempts} attempts, held as failed")
    return RetryRequested(delay=delay, reason=reason)


async def deliver(job: Job, *, client: httpx.AsyncClient, settings: Settings) -> None:
    """POST the event of `job` once, its answer's status within WEBHOOK_TIMEOUT_SECONDS; raise
    RetryRequested or DeliveryFailed unless the receiver answered a 2xx."""
    body = job.payload or b"{}"
    secret = settings.webhook_secret.get_secret_value().encode() if settings.webhook_secret else b""
    headers = {
        "Content-Type": "application/json",
        IDEMPOTENCY_KEY: str(orjson.loads(body)["id"]),
        SIGNATURE: signature(secret, body),
    }
    within = settings.webhook_timeout_seconds
    request = client.build_request(
        "POST", settings.webhook_url, content=body, headers=headers, timeout=within
    )
    deadline = asyncio.get_running_loop().time() + within
    try:
        # One deadline for the whole delivery: httpx's own timeout bounds each read, so a
        # receiver trickling its answer held the job, and a JOBS_MAX_IN_FLIGHT slot, for minutes.
        async with asyncio.timeout_at(deadline):
            response = await client.send(request, stream=True)
    except TimeoutError as error:
        raise _retry_or_fail(settings, job, f"no answer within {within:g} seconds") from error
    except httpx.HTTPError as error:  # timeouts, refused or reset connections
        raise _retry_or_fail(settings, job, f"{type(error).__name__}: {error}") from error
    try:
        async with asyncio.timeout_at(deadline):
            await _drop_body(response)
    except (TimeoutError, httpx.HTTPError):
        pass  # the status is the answer; this connection is closed rather than reused
    finally:
        await response.aclose()
    status = response.status_code
    if 200 <= status < 300:
        return
    if status >= 500 or status in _RETRIED_4XX or 300 <= status < 400:
        raise _retry_or_fail(settings, job, f"the receiver answered {status}", status)
    logger.warning("event_not_delivered", job_id=job.id, status=status, held_as_failed=True)
    raise DeliveryFailed(f"the receiver refused the event: {status}")


async def _drop_body(response: httpx.Response) -> None:
    dropped = 0
    async for chunk in response.aiter_raw():
        dropped += len(chunk)
        if dropped > _BODY_BYTES_READ:
            return
