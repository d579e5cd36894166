"""Keep secrets out of the logs: a structlog processor that masks passwords in every log line.

It masks the database password from the settings wherever it appears, and the password part of
any URL with credentials (postgresql://user:secret@host -> postgresql://user:***@host), in every
string value of the event, rendered tracebacks included. It must run after format_exc_info and
before the renderer.
"""

import re
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any
from urllib.parse import unquote

from ..settings import Settings

MASK = "***"
# scheme://user:password@ : the password ends at the last '@' before the host, so '@' inside an
# unescaped password is masked too.
_URL_PASSWORD = re.compile(r"(?P<head>[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*:)[^\s/]*@")


def _mask(text: str, secrets: tuple[str, ...]) -> str:
    if "://" in text:  # most log values hold no URL: skip the regex for them
        text = _URL_PASSWORD.sub(rf"\g<head>{MASK}@", text)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def _clean(value: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return _mask(value, secrets)
    if isinstance(value, Mapping):
        return {key: _clean(item, secrets) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_clean(item, secrets) for item in value)
    if isinstance(value, BaseException):
        return _mask(repr(value), secrets)
    return value


class RedactSecrets:
    """structlog processor: mask the given secrets and any URL password in every value."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        # Longest first, so that a secret containing another is masked whole; empty ones skipped.
        self._secrets = tuple(sorted({s for s in secrets if s}, key=len, reverse=True))

    def __call__(
        self, logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        for key, value in event_dict.items():
            event_dict[key] = _clean(value, self._secrets)
        return event_dict


def database_secrets(settings: Settings) -> list[str]:
    """The DATABASE_URL password as written and percent-decoded: either form may reach a log."""
    if settings.database_url is None:
        return []
    password = next((host["password"] for host in settings.database_url.hosts() if host["password"]), None)
    return [password, unquote(password)] if password else []


def redact_secrets(settings: Settings) -> RedactSecrets:
    """The processor for these settings: masks the database password and any URL password."""
    return RedactSecrets(database_secrets(settings))
