"""The `webhook` job: one event POSTed to WEBHOOK_URL, signed, retried with backoff.

The body is the event as enqueued ({"id", "type", "data"}), with two headers: `X-Signature:
sha256=<hex>`, the HMAC-SHA256 of the body with WEBHOOK_SECRET, and `Idempotency-Key: <event
id>`. A job can run twice (its worker killed between the POST and recording it as done): the
receiver keeps the keys it has seen and answers a repeat without acting on it again.

A 5xx, a 429, a timeout or a connection error is retried after WEBHOOK_RETRY_SECONDS, doubled for
each attempt up to WEBHOOK_RETRY_MAX_SECONDS; after WEBHOOK_MAX_ATTEMPTS deliveries, or at once on
another 4xx (the receiver refuses this event), the job is held with status `failed`
(`pgq failed` lists them, `pgq requeue` runs them again).
"""

import hashlib
import hmac
from datetime import timedelta

import httpx
import orjson
from pgqueuer.errors import RetryRequested
from pgqueuer.models import Job

from ..settings import Settings

SIGNATURE = "X-Signature"
IDEMPOTENCY_KEY = "Idempotency-Key"


class DeliveryFailed(Exception):
    """The event is not delivered and will not be retried: its job is held as failed."""


def signature(secret: bytes, body: bytes) -> str:
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def backoff(settings: Settings, attempts: int) -> timedelta:
    """The wait before the next delivery, after `attempts` failed ones (1, 2, 4 ... seconds)."""
    seconds = settings.webhook_retry_seconds * 2 ** max(attempts - 1, 0)
    return timedelta(seconds=min(seconds, settings.webhook_retry_max_seconds))


def _retry_or_fail(settings: Settings, job: Job, reason: str) -> Exception:
    attempts = job.attempts + 1  # this one included: pgqueuer counts the retries before it
    if attempts >= settings.webhook_max_attempts:
        return DeliveryFailed(f"{reason}; {attempts} attempts, held as failed")
    return RetryRequested(delay=backoff(settings, attempts), reason=reason)


async def deliver(job: Job, *, client: httpx.AsyncClient, settings: Settings) -> None:
    """POST the event of `job` once; raise RetryRequested or DeliveryFailed unless a 2xx/3xx."""
    body = job.payload or b"{}"
    secret = settings.webhook_secret.get_secret_value().encode() if settings.webhook_secret else b""
    headers = {
        "Content-Type": "application/json",
        IDEMPOTENCY_KEY: str(orjson.loads(body)["id"]),
        SIGNATURE: signature(secret, body),
    }
    try:
        response = await client.post(
            settings.webhook_url,
            content=body,
            headers=headers,
            timeout=settings.webhook_timeout_seconds,
        )
    except httpx.HTTPError as error:  # timeouts, refused or reset connections
        raise _retry_or_fail(settings, job, f"{type(error).__name__}: {error}") from error
    if response.status_code >= 500 or response.status_code == 429:
        raise _retry_or_fail(settings, job, f"the receiver answered {response.status_code}")
    if response.status_code >= 400:
        raise DeliveryFailed(f"the receiver refused the event: {response.status_code}")
