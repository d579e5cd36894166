"""The one Settings class: read from the environment once, at start-up, and passed down."""

import ipaddress
from typing import Literal, Self

from pydantic import Field, PostgresDsn, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Every knob of the service; each field is read from the environment variable of its name."""

    model_config = SettingsConfigDict(frozen=True, extra="ignore")

    app_env: Literal["dev", "test", "prod"] = Field(
        "prod", description="dev relaxes DATABASE_URL and renders logs for the console."
    )
    database_url: PostgresDsn | None = Field(
        None, description="postgresql://user:password@host:port/db; required outside dev."
    )
    host: str = Field("127.0.0.1", description="Interface to bind; 0.0.0.0 in a container.")
    port: int = Field(8000, ge=1, le=65535, description="TCP port to listen on.")
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        "info", description="Minimum level of log lines written."
    )
    pool_min_size: int = Field(
        4, ge=0, le=1000, description="Connections opened at start-up and kept warm."
    )
    pool_max_size: int = Field(
        8, ge=1, le=1000, description="Pool ceiling; replicas x this = database connections."
    )
    pool_acquire_timeout: float = Field(
        2.0, gt=0, le=60, description="Seconds a request waits for a connection before a 503."
    )
    statement_timeout_ms: int = Field(
        5000, ge=0, le=600_000, description="PostgreSQL statement_timeout per connection; 0 = off."
    )
    statement_cache_size: int = Field(
        100,
        ge=0,
        le=10_000,
        description="asyncpg prepared statements cached per connection; 0 behind PgBouncer "
        "in transaction pooling, where the next transaction may run on another server connection.",
    )

    # The server (python -m): admission by requests in flight, a cap on sockets, and time and size
    # limits on every connection, so that no client can hold a pod (see server.py).
    max_in_flight: int = Field(
        64,
        ge=1,
        le=100_000,
        description="Requests served at once, probes excluded; one more gets 503 with Retry-After "
        "at once instead of a place in a queue. `make capacity` measures it.",
    )
    limit_concurrency: int = Field(
        1000,
        ge=1,
        le=100_000,
        description="Open connections, idle keep-alive ones included, above which uvicorn answers "
        "503 at once: a cap on sockets, set well above what an ingress keeps open; "
        "MAX_IN_FLIGHT bounds the work.",
    )
    timeout_request_head: float = Field(
        10,
        gt=0,
        le=3600,
        description="Seconds a connection has to send a complete request head, from its opening "
        "or its first byte; closed otherwise, so that silent or slow clients cannot hold sockets.",
    )
    max_request_head_bytes: int = Field(
        16384,
        ge=1024,
        le=1 << 20,
        description="Largest request head (request line and headers) accepted; 431 above it.",
    )
    max_request_headers: int = Field(
        100, ge=1, le=10_000, description="Most header fields in a request head; 431 above it."
    )
    backlog: int = Field(2048, ge=1, le=65535, description="Listen backlog of the server socket.")
    max_body_bytes: int = Field(
        65536, ge=1, le=1 << 30, description="Largest request body accepted; 413 above it."
    )
    max_body_drain_bytes: int = Field(
        8 << 20,
        ge=0,
        le=1 << 30,
        description="Bytes of a refused (413) body read and discarded so that a client still "
        "sending receives the 413 instead of a reset; a longer body gets its connection closed.",
    )
    timeout_keep_alive: float = Field(
        5, gt=0, le=3600, description="Seconds an idle keep-alive connection is kept open."
    )
    timeout_graceful_shutdown: float = Field(
        20, gt=0, le=3600, description="Seconds in-flight requests get to finish on SIGTERM."
    )
    forwarded_allow_ips: str = Field(
        "",
        description="Comma-separated proxy IPs/CIDRs whose X-Forwarded-* headers are trusted; "
        "empty trusts none.",
    )
    require_if_match: bool = Field(
        False, description="PATCH and DELETE without If-Match get 428 instead of writing blindly."
    )
    docs_in_prod: bool = Field(
        False,
        description="Serve /docs, /redoc and /openapi.json when APP_ENV=prod too (always in dev, test).",
    )
    metrics_port: int = Field(
        9090, ge=0, le=65535, description="Port of the /metrics listener, apart from traffic; 0 = none."
    )
    access_log: Literal["all", "errors", "off"] = Field(
        "all", description="Access log lines: every request, only 4xx/5xx and slow ones, or none."
    )
    access_log_sample: float = Field(
        1.0, ge=0, le=1, description="Fraction of successful requests logged when ACCESS_LOG=all."
    )

    @field_validator("forwarded_allow_ips")
    @classmethod
    def _check_proxies(cls, value: str) -> str:
        for entry in filter(None, (part.strip() for part in value.split(","))):
            if entry != "*":
                ipaddress.ip_network(entry, strict=False)  # ValueError names the bad entry
        return value

    @model_validator(mode="after")
    def _check_consistency(self) -> Self:
        if self.pool_min_size > self.pool_max_size:
            raise ValueError("POOL_MIN_SIZE must not exceed POOL_MAX_SIZE")
        if self.metrics_port == self.port:
            raise ValueError("METRICS_PORT must differ from PORT: metrics stay off the traffic port")
        if self.database_url is None and self.app_env != "dev":
            raise ValueError("DATABASE_URL is required unless APP_ENV=dev")
        return self

    @property
    def docs_served(self) -> bool:
        return self.app_env != "prod" or self.docs_in_prod

    @property
    def dsn(self) -> str:
        if self.database_url is None:
            raise RuntimeError("DATABASE_URL is not set")
        return str(self.database_url)


def describe_error(error: ValidationError) -> str:
    """One line naming each bad variable, for a process that must refuse to start."""
    parts = []
    for item in error.errors():
        variable = "_".join(str(part) for part in item["loc"]).upper() or "SETTINGS"
        message = item["msg"].removeprefix("Value error, ")
        parts.append(f"{variable}: {message}" if item["loc"] else message)
    return "invalid configuration: " + "; ".join(parts)
