"""Keep secrets out of the logs: a structlog processor that masks passwords in every log line.

It masks the database password from the settings wherever it appears (as written, percent-decoded
and JSON-escaped), and the password part of any URL with credentials
(postgresql://user:secret@host -> postgresql://user:***@host).

It runs last, on the rendered line: one pass over one string covers every key, nested values and
the formatted traceback alike, at well under a microsecond for a line without a URL or secret
(per-value masking before the renderer cost several microseconds per access-log line).
"""

import json
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote

from ..settings import Settings

MASK = "***"
# scheme://user:password@ : the password ends at the last '@' before the host; quotes end it too,
# so that a URL inside a rendered JSON line never swallows the next field.
_URL_PASSWORD = re.compile(r"(?P<head>[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s\"']*:)[^\s/\"']*@")


def _mask(text: str, secrets: tuple[str, ...]) -> str:
    if "://" in text:  # most lines hold no URL: skip the regex for them
        text = _URL_PASSWORD.sub(rf"\g<head>{MASK}@", text)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


class RedactSecrets:
    """structlog processor, placed after the renderer: mask the given secrets and any URL
    password in the rendered line (str from the console and stdlib renderers, bytes from orjson).
    """

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        forms = {form for secret in secrets if secret for form in (secret, _json_escaped(secret))}
        # Longest first, so that a secret containing another is masked whole.
        self._secrets = tuple(sorted(forms, key=len, reverse=True))
        self._secret_bytes = tuple(secret.encode() for secret in self._secrets)

    # `line: Any`: structlog types a processor's input as the event dict; here it is the line.
    def __call__(self, logger: Any, method_name: str, line: Any) -> Any:
        if isinstance(line, str):
            return _mask(line, self._secrets)
        # Byte scans (`in`: memchr-fast; a compiled alternation of them is slower), no generator.
        suspect = b"://" in line
        for secret in self._secret_bytes:
            suspect = suspect or secret in line
        if suspect:
            return _mask(line.decode("utf-8", "replace"), self._secrets).encode()
        return line  # the common line: a few byte scans, no decoding


def _json_escaped(secret: str) -> str:
    return json.dumps(secret)[1:-1]


def database_secrets(settings: Settings) -> list[str]:
    """The DATABASE_URL password as written and percent-decoded: either form may reach a log."""
    if settings.database_url is None:
        return []
    hosts = settings.database_url.hosts()
    password = next((host["password"] for host in hosts if host["password"]), None)
    return [password, unquote(password)] if password else []


def redact_secrets(settings: Settings) -> RedactSecrets:
    """The processor for these settings: masks the database password and any URL password."""
    return RedactSecrets(database_secrets(settings))
