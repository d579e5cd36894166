"""FastAPI with what production turns on, done the usual way: the baseline the generated service's
production configuration is compared with (`make bench-instructions`, bench/instructions.py's
PRODUCTION).

"The usual way" is how a competent FastAPI user adds the same three options, with the libraries
most FastAPI services use for them and nothing tuned for this bench:

- tracing: OpenTelemetry's FastAPIInstrumentor and asyncpg instrumentation on an SDK tracer
  provider that keeps 10 % of new traces and follows a sampled parent
  (ParentBased(TraceIdRatioBased(0.1)), the service's default sampler); no exporter when
  OTEL_TRACES_EXPORTER=none (the bench, as it runs the service's tracing variant), OTLP over HTTP
  from the standard OTEL_* variables otherwise. The probe is not traced, as the service's are not;
- auth: an HTTPBearer dependency whose token PyJWT verifies on every request (RS256, the key by
  its kid from the issuer's JWKS through PyJWKClient's key cache; iss, aud, exp, sub required) and
  whose scope FastAPI's SecurityScopes check: items:read to read, items:write to write, against
  JWT_ISSUER, JWT_AUDIENCE and JWT_JWKS_URL, the settings the jwt bake reads;
- an Idempotency-Key on a create: the new row and its answer, stored under the token's subject
  and the key in a table of its own, written in one transaction; a replay is answered from it;
- pydantic models as each route's response_model, an asyncpg pool opened in the lifespan.

It writes no access line and no metrics (the generated service does both) and is served as minimal
FastAPI is (uvloop, httptools, no access log): whatever it leaves out counts in its favour.
"""

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import asyncpg
import jwt
from fastapi import Depends, FastAPI, Header, HTTPException, Request, Response, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer, SecurityScopes
from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor
from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

from .common import (
    DATABASE_URL,
    DELETE,
    INSERT,
    POOL_SIZE,
    SELECT_BY_ID,
    SELECT_PAGE,
    UPDATE_QUANTITY,
)
from .models import Item, ItemCreate, ItemPage, ItemUpdate

READ_SCOPE, WRITE_SCOPE = "items:read", "items:write"
LEEWAY_SECONDS = 30  # the jwt bake's default JWT_LEEWAY_SECONDS

CREATE_KEYS_TABLE = """
    CREATE TABLE IF NOT EXISTS fastapi_idempotency_keys (
        subject    text        NOT NULL,
        key        text        NOT NULL,
        answer     jsonb       NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (subject, key)
    )
"""
SELECT_ANSWER = "SELECT answer FROM fastapi_idempotency_keys WHERE subject = $1 AND key = $2"
STORE_ANSWER = "INSERT INTO fastapi_idempotency_keys (subject, key, answer) VALUES ($1, $2, $3)"


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    app.state.issuer = os.environ["JWT_ISSUER"]
    app.state.audience = os.environ["JWT_AUDIENCE"]
    # PyJWKClient fetches with urllib: the first fetch here, off the event loop; then each kid's
    # key comes from its cache (a kid the set lacks fetches the set again).
    app.state.jwks = jwt.PyJWKClient(os.environ["JWT_JWKS_URL"], cache_keys=True)
    await asyncio.to_thread(app.state.jwks.get_signing_keys)
    app.state.pool = await asyncpg.create_pool(DATABASE_URL, min_size=POOL_SIZE, max_size=POOL_SIZE)
    await app.state.pool.execute(CREATE_KEYS_TABLE)
    yield
    await app.state.pool.close()


app = FastAPI(lifespan=lifespan)

tracer_provider = TracerProvider(
    sampler=ParentBased(TraceIdRatioBased(0.1)),
    resource=Resource.create({SERVICE_NAME: "production-fastapi"}),
)
if os.environ.get("OTEL_TRACES_EXPORTER", "otlp") != "none":
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
FastAPIInstrumentor.instrument_app(app, tracer_provider=tracer_provider, excluded_urls="healthz")
AsyncPGInstrumentor().instrument(tracer_provider=tracer_provider)  # type: ignore[no-untyped-call]

bearer = HTTPBearer()


async def token_claims(
    security_scopes: SecurityScopes,
    credentials: Annotated[HTTPAuthorizationCredentials, Depends(bearer)],
    request: Request,
) -> dict[str, Any]:
    """The verified claims of the request's bearer token: 401 for a bad token, 403 for a good one
    without the route's scopes."""
    state = request.app.state
    try:
        key = state.jwks.get_signing_key_from_jwt(credentials.credentials)
        claims: dict[str, Any] = jwt.decode(
            credentials.credentials,
            key.key,
            algorithms=["RS256"],
            audience=state.audience,
            issuer=state.issuer,
            leeway=LEEWAY_SECONDS,
            options={"require": ["exp", "iss", "aud", "sub"]},
        )
    except jwt.PyJWTError as error:
        raise HTTPException(
            401, f"Invalid token: {error}", headers={"WWW-Authenticate": "Bearer"}
        ) from error
    granted = str(claims.get("scope", "")).split()
    for scope in security_scopes.scopes:
        if scope not in granted:
            raise HTTPException(
                403, f"Missing scope {scope}", headers={"WWW-Authenticate": "Bearer"}
            )
    return claims


Reader = Annotated[dict[str, Any], Security(token_claims, scopes=[READ_SCOPE])]
Writer = Annotated[dict[str, Any], Security(token_claims, scopes=[WRITE_SCOPE])]


@app.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@app.get("/items/{item_id}", response_model=Item)
async def get_item(item_id: int, request: Request, _: Reader) -> Any:
    async with request.app.state.pool.acquire() as connection:
        row = await connection.fetchrow(SELECT_BY_ID, item_id)
    if row is None:
        raise HTTPException(404)
    return dict(row)


@app.get("/items", response_model=ItemPage)
async def list_items(request: Request, _: Reader, after: int = 0, limit: int = 20) -> Any:
    async with request.app.state.pool.acquire() as connection:
        rows = await connection.fetch(SELECT_PAGE, after, limit)
    next_after = rows[-1]["id"] if len(rows) == limit else None
    return {"data": [dict(row) for row in rows], "next_after": next_after}


@app.post("/items", status_code=201, response_model=Item)
async def create_item(
    new: ItemCreate,
    request: Request,
    claims: Writer,
    idempotency_key: Annotated[str | None, Header(min_length=1, max_length=255)] = None,
) -> Any:
    values = (new.name, new.description, new.price_cents, new.quantity)
    if idempotency_key is None:
        async with request.app.state.pool.acquire() as connection:
            return dict(await connection.fetchrow(INSERT, *values))
    subject = claims["sub"]
    async with request.app.state.pool.acquire() as connection, connection.transaction():
        answer = await connection.fetchval(SELECT_ANSWER, subject, idempotency_key)
        if answer is not None:
            return Response(answer, 201, {"Idempotency-Replayed": "true"}, "application/json")
        item = Item.model_validate(dict(await connection.fetchrow(INSERT, *values)))
        try:
            await connection.execute(STORE_ANSWER, subject, idempotency_key, item.model_dump_json())
        except asyncpg.UniqueViolationError:
            # The same key's first request committed meanwhile: this one's row is rolled back.
            raise HTTPException(409, "This Idempotency-Key is in use; retry") from None
    return item


@app.patch("/items/{item_id}", response_model=Item)
async def update_item(item_id: int, changes: ItemUpdate, request: Request, _: Writer) -> Any:
    async with request.app.state.pool.acquire() as connection:
        row = await connection.fetchrow(UPDATE_QUANTITY, item_id, changes.quantity)
    if row is None:
        raise HTTPException(404)
    return dict(row)


@app.delete("/items/{item_id}", status_code=204)
async def delete_item(item_id: int, request: Request, _: Writer) -> Response:
    async with request.app.state.pool.acquire() as connection:
        deleted = await connection.fetchval(DELETE, item_id)
    if deleted is None:
        raise HTTPException(404)
    return Response(status_code=204)
