"""API keys and endpoint URLs: where a key comes from, and that it never leaks.

- The task endpoints' key is read from `OPENAI_API_KEY` (or the variable named by `--api-key-env`), the
  reflection endpoint's from `REFLECTION_API_KEY` (or `--reflection-api-key-env`); it is sent only as
  `Authorization: Bearer <key>`. Only the variable's NAME is ever kept in a config, identity or log.
- A URL with embedded credentials (`http://user:pass@host/v1`) is refused; the error shows the URL with the
  user info replaced by `***`.
- `scrub()` removes every key read by this process from a text (defence in depth for error lines).
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from core.errors import UsageError
from core.scrub import MIN_SECRET_CHARS, secret_values

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
DEFAULT_REFLECTION_API_KEY_ENV = "REFLECTION_API_KEY"

_SEEN_KEYS: set[str] = set()


class ApiKey:
    """A secret string whose repr and str never show it."""

    __slots__ = ("_value", "source")

    def __init__(self, value: str, source: str):
        self._value = value
        self.source = source
        _SEEN_KEYS.add(value)

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"ApiKey(from ${self.source})"

    __str__ = __repr__


def check_env_name(name: str, what: str) -> str:
    if not name or not name.isascii() or not all(c.isalnum() or c == "_" for c in name) or name[0].isdigit():
        raise UsageError(f"{what} must name an environment variable (letters, digits, _), got {name!r}")
    return name


def api_key_from_env(name: str, *, required: bool, what: str) -> ApiKey | None:
    """The key in environment variable `name`; None when unset and not required. Raises UsageError (no echo)."""
    value = os.environ.get(name, "")
    if not value:
        if required:
            raise UsageError(f"{what} names ${name}, which is not set or empty")
        return None
    if not value.isascii() or not value.isprintable() or any(c.isspace() for c in value):
        raise UsageError(f"${name} holds characters that cannot be sent in an HTTP header (value not shown)")
    return ApiKey(value, name)


def redacted_url(url: str) -> str:
    """`url` with any user info replaced by `***` (safe to print)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return parts._replace(netloc=f"***@{host}").geturl()


def check_endpoint_url(url: str, what: str) -> str:
    """An http(s) base URL with a host, a valid port and no embedded credentials (one-line UsageError)."""
    shown = redacted_url(url)
    if not url.isascii() or not url.isprintable() or any(c.isspace() for c in url):
        raise UsageError(f"{what} must be a printable ASCII URL without spaces, got {shown!r}")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise UsageError(f"{what} is not a valid URL (bad port or brackets): {shown!r}") from None
    if parts.scheme not in ("http", "https"):
        raise UsageError(f"{what} must be an http(s) URL, got {shown!r}")
    if "@" in parts.netloc:
        raise UsageError(f"{what} {shown} embeds credentials (user:password@); put the key in "
                         f"${DEFAULT_API_KEY_ENV} (or the variable named by --api-key-env) instead")
    if not parts.hostname:
        raise UsageError(f"{what} has no host: {shown!r}")
    if port == 0:
        raise UsageError(f"{what} has port 0: {shown!r}")
    return url


def recorded_secrets() -> tuple[str, ...]:
    """What the recorded path scrubs (engine/agent_context.py, engine/rollout.py): the values of this
    process's secret-named variables and every key it has read (also one named by --api-key-env), longest first."""
    values = set(secret_values(os.environ)) | {k for k in _SEEN_KEYS if len(k) >= MIN_SECRET_CHARS}
    return tuple(sorted(values, key=lambda v: (-len(v), v)))


def scrub(text: str) -> str:
    """`text` with every API key this process has read replaced by `***`."""
    for key in _SEEN_KEYS:
        if len(key) >= 4 and key in text:  # a 1-3 character "key" would mangle every message
            text = text.replace(key, "***")
    return text
