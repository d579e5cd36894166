"""Cost of verifying one bearer token, per library: the measurement behind the jwt bake's choice.

Each library gets the same token (RS256 with a 2048-bit key, ES256 on P-256, typical OIDC access-
token claims) and the same key, already parsed from a JWK, and does the full check the service
needs: signature, algorithm pinned by the key, exp, nbf, iss and aud. Interleaved timeit rounds,
microseconds per token. Run: `.venv/bin/python bench/jwt_libraries.py`.
"""

import argparse
import json
import statistics
import time
import timeit
from collections.abc import Callable
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from joserfc import jwt as jose_jwt
from joserfc.jwk import KeySet
from jwcrypto import jwk as jwc_jwk
from jwcrypto import jwt as jwc_jwt

ISSUER, AUDIENCE = "https://issuer.example", "inventory"


def _token(algorithm: str) -> tuple[str, dict[str, Any]]:
    private: Any = (
        rsa.generate_private_key(65537, 2048)
        if algorithm == "RS256"
        else ec.generate_private_key(ec.SECP256R1())
    )
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "user-1", "iat": now, "nbf": now,
              "exp": now + 3600, "scope": "items:read items:write", "client_id": "frontend",
              "jti": "0123456789abcdef"}  # fmt: skip
    token = jwt.encode(claims, private, algorithm=algorithm, headers={"kid": "k1"})
    public = json.loads(jwt.get_algorithm_by_name(algorithm).to_jwk(private.public_key()))
    jwk: dict[str, Any] = {**public, "kid": "k1", "alg": algorithm, "use": "sig"}
    return token, jwk


def _pyjwt(token: str, jwk: dict[str, Any]) -> Callable[[], object]:
    key = jwt.PyJWK(jwk)
    options: Any = {"require": ["exp", "iss", "aud"]}
    return lambda: jwt.decode(
        token, key, algorithms=[jwk["alg"]], audience=AUDIENCE, issuer=ISSUER, options=options
    )


def _joserfc(token: str, jwk: dict[str, Any]) -> Callable[[], object]:
    keys = KeySet.import_key_set({"keys": [jwk]})
    registry = jose_jwt.JWTClaimsRegistry(
        iss={"essential": True, "value": ISSUER},
        aud={"essential": True, "value": AUDIENCE},
        exp={"essential": True},
    )

    def verify() -> object:
        decoded = jose_jwt.decode(token, keys, algorithms=[jwk["alg"]])
        registry.validate(decoded.claims)
        return decoded.claims

    return verify


def _jwcrypto(token: str, jwk: dict[str, Any]) -> Callable[[], object]:
    key = jwc_jwk.JWK(**jwk)
    checks = {"iss": ISSUER, "aud": AUDIENCE, "exp": None}
    return lambda: jwc_jwt.JWT(jwt=token, key=key, algs=[jwk["alg"]], check_claims=checks).claims


LIBRARIES = {"PyJWT": _pyjwt, "joserfc": _joserfc, "jwcrypto": _jwcrypto}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--number", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    tokens = {algorithm: _token(algorithm) for algorithm in ("RS256", "ES256")}
    checks = {
        (name, algorithm): build(*tokens[algorithm])
        for name, build in LIBRARIES.items()
        for algorithm in tokens
    }
    for verify in checks.values():
        verify()  # a wrong set-up fails here, not inside the timing
    # Interleaved: every library and algorithm once per round, so noise from other work on the
    # machine lands on all of them alike; the minimum is the cost, the median shows the noise.
    samples: dict[tuple[str, str], list[float]] = {key: [] for key in checks}
    for _ in range(args.repeat):
        for key, verify in checks.items():
            samples[key].append(timeit.timeit(verify, number=args.number) / args.number * 1e6)
    print("| Library | RS256 min (median) us/token | ES256 min (median) us/token |\n|---|---|---|")
    for name in LIBRARIES:
        cells = [
            f"{min(samples[name, a]):.1f} ({statistics.median(samples[name, a]):.1f})"
            for a in tokens
        ]
        print(f"| {name} | {' | '.join(cells)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
