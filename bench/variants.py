"""The service's options as the bench serves them, by CPU time (bench.features) and by instruction
count (bench.instructions): each variant's bake (its auth), the settings it sets over the
service's, and the headers wrk sends on every request to it.

  off             auth=none, tracing off: the reference
  api_key         auth=api_key, X-API-Key on every request
  jwt             auth=jwt, one RS256 bearer token on every request, JWT_CACHE_SIZE=0
  jwt_cached      the same with the verified-token cache (the default, 4096)
  tracing_0.1     auth=none, TRACING=true, 10 % of traces sampled (the default), no exporter
  tracing_1.0     the same with every request sampled
  rate_limit      auth=none, RATE_LIMIT_RPS on (a rate never reached: a token taken per request,
                  none refused), the client keyed by its address
  api_key_rate_limit  auth=api_key with the rate limit, the client keyed by its key's digest
  production      auth=jwt with the verified-token cache and TRACING=true at 10 %, no exporter:
                  production's options together (bench.instructions sends its creates an
                  Idempotency-Key each, the `create_keyed` workload)

Spans are made but not exported (OTEL_TRACES_EXPORTER=none): the price measured is the service's,
not a collector's.
"""

import contextlib
import hashlib
import importlib.util
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tests.baking import bake

API_KEY = "bench-api-key-0123456789"
_API_KEY_HASHES = {"API_KEY_HASHES": hashlib.sha256(API_KEY.encode()).hexdigest()}
# The limiter's bookkeeping on every request, and no refusal: wrk is one client far below it.
_UNREACHED_RATE = {"RATE_LIMIT_RPS": "1000000", "RATE_LIMIT_BURST": "1000000"}
_TRACING = {"TRACING": "true", "OTEL_TRACES_EXPORTER": "none"}
VARIANTS: dict[str, tuple[str, dict[str, str]]] = {  # name: (auth of the bake, settings)
    "off": ("none", {}),
    "api_key": ("api_key", _API_KEY_HASHES),
    "jwt": ("jwt", {"JWT_CACHE_SIZE": "0"}),
    "jwt_cached": ("jwt", {}),
    "tracing_0.1": ("none", _TRACING),
    "tracing_1.0": ("none", {**_TRACING, "OTEL_TRACES_SAMPLER_ARG": "1"}),
    "rate_limit": ("none", _UNREACHED_RATE),
    "api_key_rate_limit": ("api_key", {**_API_KEY_HASHES, **_UNREACHED_RATE}),
    "production": ("jwt", _TRACING),
}
# Longer than any run: bench.instructions starts its jwt server well after the token is signed.
_TOKEN_LIFETIME = 6 * 3600


def _issuer(project: Path) -> Any:
    """The jwt bake's own issuer (loadtest/drive/issuer.py): keys, tokens and a JWKS server."""
    spec = importlib.util.spec_from_file_location(
        "bench_issuer", project / "loadtest" / "drive" / "issuer.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Issuer()


class Variants:
    """One bake per auth the variants `names` use, made under `work`; entered, the jwt bake's
    issuer serves its JWKS, and every jwt variant sends one token it signed."""

    def __init__(self, work: Path, names: Iterable[str]) -> None:
        auths = dict.fromkeys(VARIANTS[name][0] for name in names)
        self._projects = {auth: bake(work / auth, auth=auth) for auth in auths}
        self._auth_env: dict[str, dict[str, str]] = {}
        self._headers: dict[str, dict[str, str]] = {"none": {}, "api_key": {"X-API-Key": API_KEY}}
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> "Variants":
        if "jwt" in self._projects:
            issuer = self._stack.enter_context(_issuer(self._projects["jwt"]))
            settings = issuer.settings().items()
            self._auth_env["jwt"] = {name.upper(): str(value) for name, value in settings}
            token = issuer.token(scope="items:read items:write", lifetime=_TOKEN_LIFETIME)
            self._headers["jwt"] = {"Authorization": f"Bearer {token}"}
        return self

    def __exit__(self, *_: object) -> None:
        self._stack.close()

    def project(self, name: str) -> Path:
        """The bake that serves variant `name`."""
        return self._projects[VARIANTS[name][0]]

    def env(self, name: str) -> dict[str, str]:
        """The settings variant `name` sets over the service's (the issuer's, for jwt)."""
        auth, settings = VARIANTS[name]
        return {**self._auth_env.get(auth, {}), **settings}

    def headers(self, name: str) -> dict[str, str]:
        """The headers of every request to variant `name`: its credentials."""
        return self._headers[VARIANTS[name][0]]
