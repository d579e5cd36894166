"""The one Settings class: read from the environment once, at start-up, and passed down."""

import ipaddress
{%- if cookiecutter.auth == "api_key" %}
from functools import cached_property
{%- endif %}
from pathlib import Path
from typing import Annotated, {% if cookiecutter.auth != "none" %}ClassVar, {% endif %}Literal, Self

from pydantic import {% if cookiecutter.auth == "jwt" or cookiecutter.jobs == "postgres" %}AnyHttpUrl, {% endif %}Field, PostgresDsn, SecretStr, field_validator, model_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from .settings_sources import SECRETS_DIR, EnvironmentThenSecretFiles

# A comma-separated list in the environment, e.g. CORS_ALLOW_ORIGINS=https://a.example,https://b.example
CommaList = Annotated[list[str], NoDecode]
{%- if cookiecutter.auth == "api_key" %}
# What an API key may be allowed to do (API_KEY_HASHES): the roles READ and WRITE of kit/auth.py.
API_KEY_SCOPES = ("read", "write")
{%- endif %}


def _entries(spec: str) -> list[str]:
    """The entries of a comma-separated setting, blanks dropped."""
    return [entry for entry in (part.strip() for part in spec.split(",")) if entry]


class Settings(EnvironmentThenSecretFiles):
    """Every knob of the service; each field is read from the environment variable of its name."""

    model_config = SettingsConfigDict(frozen=True, extra="ignore")
{%- if cookiecutter.auth != "none" %}
    # The server checks every request's credentials against these settings: outside dev they are
    # required. A process that answers no request reads them as optional (CommandSettings).
    requires_credentials: ClassVar[bool] = True
{%- endif %}

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
    # limits on every connection, so that no client can hold a pod (see serving/server.py).
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
    timeout_request_body: float = Field(
        10,
        gt=0,
        le=3600,
        description="Seconds a request has to send its whole body, from the end of its head; "
        "408 and the connection closed otherwise. A request waiting for its body holds no "
        "MAX_IN_FLIGHT slot, only its socket, until then. Raise it with MAX_BODY_BYTES for "
        "large bodies from slow clients.",
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
    # Above the idle timeout of the balancer in front (AWS ALB and ingress-nginx's upstream
    # keepalive: 60 s): the balancer must close an idle connection before the server does, or it
    # reuses one the server is closing and its client gets a 502 (not retried for a POST).
    timeout_keep_alive: float = Field(
        75,
        gt=0,
        le=3600,
        description="Seconds an idle keep-alive connection is kept open: above the idle timeout "
        "of the load balancer in front (60 s for AWS ALB and ingress-nginx; 620 behind Google's "
        "load balancer, whose is 600 s).",
    )
    timeout_graceful_shutdown: float = Field(
        20, gt=0, le=3600, description="Seconds in-flight requests get to finish on SIGTERM."
    )
    # Per-client rate limits (serving/middleware/rate_limit.py): a token bucket per API key, token
    # or address, held in this process: a limit per pod, not per service.
    rate_limit_rps: float = Field(
        0,
        ge=0,
        le=1_000_000,
        description="Requests a second each client may make, on average, to this pod; 0 = off. "
        "Per pod: a global rate G over N replicas is G/N here, and the HPA changes N; a global "
        "limit belongs to the ingress or gateway. Off by default: until FORWARDED_ALLOW_IPS names "
        "the proxy in front, every client without a credential has the proxy's address and they "
        "would all share one bucket.",
    )
    rate_limit_burst: int = Field(
        50,
        ge=1,
        le=1_000_000,
        description="Requests a client may make at once above its rate (the bucket's size).",
    )
    rate_limit_clients: int = Field(
        100_000,
        ge=1,
        le=10_000_000,
        description="Client buckets kept per pod (about 300 bytes each: 30 MB at the default), "
        "the least recently seen dropped first: memory stays bounded whatever the number of clients.",
    )
    rate_limit_ipv6_prefix: int = Field(
        64,
        ge=32,
        le=128,
        description="Bits of an IPv6 client address that make one client for the rate limit: a "
        "/64 is the usual allocation to one site, whose 2^64 addresses would otherwise each get a "
        "bucket of their own. IPv4-mapped addresses count as their IPv4 address.",
    )
    forwarded_allow_ips: str = Field(
        "",
        description="Comma-separated proxy IPs/CIDRs whose X-Forwarded-* headers are trusted; "
        "empty trusts none. `*` (every peer) is refused with APP_ENV=prod: the client would "
        "then choose the address its rate limit and logs see.",
    )
    require_if_match: bool = Field(
        False, description="PATCH and DELETE without If-Match get 428 instead of writing blindly."
    )
    cursor_secret: SecretStr | None = Field(
        None,
        description="Key that signs the list pages' cursors (HMAC-SHA256), overriding the one the "
        "migrations keep in the database (table cursor_keys) that every pod shares; unset, that one.",
    )
    idempotency_ttl_seconds: int = Field(
        86400,
        ge=60,
        le=30 * 86400,
        description="Seconds a create's Idempotency-Key is kept: a retry within them gets the first "
        "answer again; after them the key is free and its stored answer removed.",
    )
    docs_in_prod: bool = Field(
        False,
        description="Serve /docs, /redoc and /openapi.json when APP_ENV=prod too (always in dev, test).",
    )
    metrics_port: int = Field(
        9090,
        ge=0,
        le=65535,
        description="Port of the /metrics listener, apart from traffic; 0 = none.",
    )
    fast_dispatch: bool = Field(
        True,
        description="Requests reach their route without FastAPI's router (kit/dispatch.py); "
        "false takes FastAPI's router for every request.",
    )
    access_log: Literal["all", "errors", "off"] = Field(
        "all", description="Access log lines: every request, only 4xx/5xx and slow ones, or none."
    )
    access_log_sample: float = Field(
        1.0, ge=0, le=1, description="Fraction of successful requests logged when ACCESS_LOG=all."
    )
    profiling: bool = Field(
        False,
        description="A request with ?profile=1 gets pyinstrument's HTML profile of itself instead "
        "of its answer (dev extra); refused when APP_ENV=prod.",
    )

    secrets_dir: Path = Field(
        Path(SECRETS_DIR),
        description="Folder of files named after settings (DATABASE_URL, ...) read when the "
        "variable is unset: a Secret mounted as files. Only from the environment.",
    )

    # CORS: no layer at all unless origins are listed.
    cors_allow_origins: CommaList = Field(
        [],
        description="Comma-separated origins allowed to call the API from a browser; empty = no CORS.",
    )
    cors_allow_methods: CommaList = Field(
        ["GET", "POST", "PATCH", "DELETE"], description="Methods a cross-origin request may use."
    )
    cors_allow_headers: CommaList = Field(
        [
            "Content-Type",
            "If-Match",
            "If-None-Match",
            "Idempotency-Key",
            "X-Request-ID",{% if cookiecutter.auth == "api_key" %}
            "X-API-Key",{% elif cookiecutter.auth == "jwt" %}
            "Authorization",{% endif %}
        ],
        description="Request headers a cross-origin request may send.",
    )
    cors_max_age: int = Field(
        600, ge=0, le=86_400, description="Seconds a browser may cache a preflight answer."
    )

    # Tracing: OpenTelemetry from the `tracing` extra, not even imported while off. The exporter
    # reads the other OTEL_* variables itself (OTEL_EXPORTER_OTLP_ENDPOINT, ..._HEADERS, ...).
    tracing: bool = Field(
        False, description="Trace requests and database calls with OpenTelemetry (extra `tracing`)."
    )
    otel_service_name: str = Field("{{ cookiecutter.project_slug }}", description="service.name of the traces.")
    otel_traces_sampler: Literal[
        "parentbased_traceidratio",
        "traceidratio",
        "parentbased_always_on",
        "always_on",
        "parentbased_always_off",
        "always_off",
    ] = Field(
        "parentbased_traceidratio",
        description="Which requests are traced; parentbased_* follow a sampled traceparent.",
    )
    otel_traces_sampler_arg: float = Field(
        0.1, ge=0, le=1, description="Fraction of new traces kept by the *traceidratio samplers."
    )
    otel_traces_exporter: Literal["otlp", "none"] = Field(
        "otlp", description="otlp sends spans over HTTP to OTEL_EXPORTER_OTLP_ENDPOINT."
    )
{%- if cookiecutter.auth == "api_key" %}

    # Authentication (auth=api_key): the X-API-Key header.
    api_key_hashes: CommaList = Field(
        [],
        description="Comma-separated SHA-256 hex digests of the accepted API keys (several at once "
        "for rotation), each alone (reads and writes) or followed by its scopes: `<digest>:read`, "
        "`<digest>:read,write`; required unless APP_ENV=dev.",
    )
{%- elif cookiecutter.auth == "jwt" %}

    # Authentication (auth=jwt): bearer tokens of an OIDC issuer, verified against its JWKS.
    jwt_issuer: str | None = Field(
        None, description="The tokens' iss, exactly; required unless APP_ENV=dev."
    )
    jwt_audience: str | None = Field(
        None, description="The aud a token must name; required unless APP_ENV=dev."
    )
    jwt_jwks_url: AnyHttpUrl | None = Field(
        None, description="The issuer's JWKS (jwks_uri); required unless APP_ENV=dev."
    )
    jwt_read_scope: str = Field("{{ cookiecutter.resource_plural }}:read", description="Scope a token needs to read.")
    jwt_write_scope: str = Field(
        "{{ cookiecutter.resource_plural }}:write",
        description="Scope a token needs to create, change or delete.",
    )
    jwt_leeway_seconds: int = Field(
        30, ge=0, le=300, description="Clock skew allowed on exp and nbf."
    )
    jwt_cache_size: int = Field(
        4096,
        ge=0,
        le=1_000_000,
        description="Verified tokens kept until their exp (JWKS_REFRESH_SECONDS at most, and "
        "only while the issuer publishes their key), so a repeated token skips the signature "
        "check; 0 = off.",
    )
    jwks_refresh_seconds: float = Field(
        600, ge=10, le=86_400, description="Seconds between background refreshes of the JWKS."
    )
    jwks_min_refresh_seconds: float = Field(
        30,
        ge=0,
        le=3600,
        description="At most one refresh per this many seconds for tokens naming an unknown kid.",
    )
    jwks_timeout: float = Field(5, gt=0, le=60, description="Seconds to fetch the JWKS.")
    jwks_startup_seconds: float = Field(
        15,
        ge=0,
        le=300,
        description="At start-up, seconds within which a failed JWKS fetch is tried again (with a "
        "growing pause); past them the start fails. Keep it, plus JWKS_TIMEOUT, inside the "
        "startup probe's allowance.",
    )
{%- endif %}
{%- if cookiecutter.jobs == "postgres" %}
    webhook_url: str = Field(
        "",
        description="Where each create's `created` event is POSTed by the worker (docs/jobs.md); "
        "empty = no event enqueued.",
    )
    webhook_secret: SecretStr | None = Field(
        None,
        description="Key of the events' X-Signature header (HMAC-SHA256 of the body); required "
        "with WEBHOOK_URL.",
    )
    webhook_timeout_seconds: float = Field(
        10, gt=0, le=300, description="Seconds one delivery may take before it counts as failed."
    )
    webhook_max_attempts: int = Field(
        8,
        ge=1,
        le=100,
        description="Deliveries of one event before it is held as failed (5xx and timeouts retry).",
    )
    webhook_retry_seconds: float = Field(
        1, gt=0, le=3600, description="Wait before the second delivery; doubled for each next one."
    )
    webhook_retry_max_seconds: float = Field(
        300, gt=0, le=86400, description="Longest wait between two deliveries of one event."
    )
    jobs_heartbeat_timeout_seconds: float = Field(
        30,
        gt=0,
        le=3600,
        description="A picked job whose worker sent no heartbeat for this long runs again; must "
        "exceed the longest job (WEBHOOK_TIMEOUT_SECONDS).",
    )
    jobs_poll_seconds: float = Field(
        5,
        gt=0,
        le=600,
        description="The worker looks for jobs at least this often when no NOTIFY woke it.",
    )
    jobs_batch_size: int = Field(
        10, ge=1, le=1000, description="Jobs the worker takes per dequeue, run concurrently."
    )
    # At most httpx's 100 pooled connections: no delivery waits in the pool against its timeout.
    jobs_max_in_flight: int = Field(
        50,
        ge=2,
        le=100,
        description="Jobs one worker runs at once, at least twice JOBS_BATCH_SIZE: a backlog waits "
        "in the queue, not in the worker's memory and its HTTP client's pool.",
    )
    # Minutes, far above a slow moment: a table locked by a migration for a while must not
    # restart every worker.
    jobs_stall_seconds: float = Field(
        300,
        ge=10,
        le=3600,
        description="The worker's /healthz fails (its pod is restarted) once, connected, it has "
        "completed no read of the queue table for this long: a half-open connection.",
    )
    jobs_listen: bool = Field(
        True,
        description="The worker wakes on the queue's NOTIFY; false leaves it to JOBS_POLL_SECONDS.",
    )
    jobs_prune_cron: str = Field(
        "*/15 * * * *",
        description="When the job log is pruned: a cron expression (a sixth field counts seconds), "
        "run by one worker per tick however many run.",
    )
    jobs_log_retention_hours: float = Field(
        168,
        gt=0,
        le=24 * 366,
        description="Rows of the job log (pgqueuer_log) older than this are pruned (JOBS_PRUNE_CRON).",
    )
{%- endif %}

    @field_validator("secrets_dir")
    @classmethod
    def _check_secrets_dir(cls, value: Path) -> Path:
        # The default folder may be absent (no Secret mounted); a folder named on purpose may not.
        if value != Path(SECRETS_DIR) and not value.is_dir():
            raise ValueError(f"{value} is not a folder")
        return value

    @field_validator(
        "cors_allow_origins",
        "cors_allow_methods",
        "cors_allow_headers",{% if cookiecutter.auth == "api_key" %}
        "api_key_hashes",{% endif %}
        mode="before",
    )
    @classmethod
    def _split_commas(cls, value: object) -> object:
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        return value
{%- if cookiecutter.auth == "api_key" %}

    @field_validator("api_key_hashes")
    @classmethod
    def _check_digests(cls, value: list[str]) -> list[str]:
        # One key per entry: its digest, alone or followed by `:scope`; a bare scope after an entry
        # continues that entry's list (`<digest>:read,write` arrives split at its comma).
        entries: list[tuple[str, list[str]]] = []
        for item in (item.lower() for item in value):
            if item in API_KEY_SCOPES and entries and entries[-1][1]:
                entries[-1][1].append(item)
                continue
            digest, colon, scope = item.partition(":")
            if len(digest) != 64 or set(digest) - set("0123456789abcdef"):
                raise ValueError("each entry must be a SHA-256 hex digest (64 hex digits)")
            if colon and scope not in API_KEY_SCOPES:
                raise ValueError(
                    f"a key's scopes are {' and '.join(API_KEY_SCOPES)}, not {scope!r}"
                )
            if digest in (known for known, _ in entries):
                raise ValueError(f"the digest {digest[:8]}... is listed twice")
            entries.append((digest, [scope] if colon else []))
        return [
            f"{digest}:{','.join(sorted(set(scopes)))}" if scopes else digest
            for digest, scopes in entries
        ]

    @cached_property
    def api_keys(self) -> dict[str, frozenset[str]]:
        """API_KEY_HASHES as digest -> scopes; a digest listed alone may read and write."""
        keys = {}
        for entry in self.api_key_hashes:
            digest, _, scopes = entry.partition(":")
            keys[digest] = frozenset(scopes.split(",")) if scopes else frozenset(API_KEY_SCOPES)
        return keys
{%- endif %}

    @field_validator("forwarded_allow_ips")
    @classmethod
    def _check_proxies(cls, value: str) -> str:
        for entry in _entries(value):
            if entry != "*":
                ipaddress.ip_network(entry, strict=False)  # ValueError names the bad entry
        return value

    @model_validator(mode="after")
    def _check_consistency(self) -> Self:
        if self.pool_min_size > self.pool_max_size:
            raise ValueError("POOL_MIN_SIZE must not exceed POOL_MAX_SIZE")
        if self.metrics_port == self.port:
            raise ValueError(
                "METRICS_PORT must differ from PORT: metrics stay off the traffic port"
            )
        if self.app_env == "prod" and "*" in _entries(self.forwarded_allow_ips):
            # uvicorn then takes the leftmost X-Forwarded-For entry, which the client writes.
            raise ValueError(
                "FORWARDED_ALLOW_IPS=* is refused with APP_ENV=prod: every client would choose "
                "its own address (rate limit, logs); name the proxies' IPs or CIDRs"
            )
{%- if cookiecutter.jobs == "postgres" %}
        if self.webhook_url:
            AnyHttpUrl(self.webhook_url)  # a ValueError naming what is wrong
            if self.webhook_secret is None:
                raise ValueError("WEBHOOK_SECRET is required with WEBHOOK_URL")
        if self.jobs_heartbeat_timeout_seconds <= self.webhook_timeout_seconds:
            # A job still running past the heartbeat timeout would be taken by a second worker.
            raise ValueError(
                "JOBS_HEARTBEAT_TIMEOUT_SECONDS must exceed WEBHOOK_TIMEOUT_SECONDS, the longest job"
            )
        if self.jobs_max_in_flight < 2 * self.jobs_batch_size:
            # pgqueuer refuses a cap below two batches when the worker starts; say so at once.
            raise ValueError("JOBS_MAX_IN_FLIGHT must be at least twice JOBS_BATCH_SIZE")
{%- endif %}
        if self.database_url is None and self.app_env != "dev":
            raise ValueError("DATABASE_URL is required unless APP_ENV=dev")
        if self.profiling and self.app_env == "prod":
            # Anyone could make any request run under the profiler and read the service's code.
            raise ValueError("PROFILING=true is refused when APP_ENV=prod")
{%- if cookiecutter.auth == "api_key" %}
        if self.requires_credentials and not self.api_key_hashes and self.app_env != "dev":
            raise ValueError("API_KEY_HASHES is required unless APP_ENV=dev")
{%- elif cookiecutter.auth == "jwt" %}
        missing = [
            name.upper()
            for name in ("jwt_issuer", "jwt_audience", "jwt_jwks_url")
            if getattr(self, name) is None
        ]
        if self.requires_credentials and missing and self.app_env != "dev":
            raise ValueError(f"{', '.join(missing)} required unless APP_ENV=dev")
{%- endif %}
        return self

    @property
    def docs_served(self) -> bool:
        return self.app_env != "prod" or self.docs_in_prod

    @property
    def dsn(self) -> str:
        if self.database_url is None:
            raise RuntimeError("DATABASE_URL is not set")
        return str(self.database_url)
{%- if cookiecutter.auth != "none" %}


class CommandSettings(Settings):
    """The settings of a process that answers no request ({% if cookiecutter.jobs == "postgres" %}the worker, {% endif %}`rotate-cursor-key`): the
    credentials it never checks are not required of it."""

    requires_credentials = False
{%- endif %}
