"""Scrubbing of secret-shaped strings from text that came out of model-written code.

Program output flows into scorer feedback and tool results, which are stored, exported in rollout cards and shown
to the reflection model. Before that, it is capped and passed through `scrub`:

- the VALUES of the engine's own secret environment variables (`secret_values(environ)`: OPENAI_API_KEY,
  REFLECTION_API_KEY, HF_TOKEN, anything named *_API_KEY, *_TOKEN, *_SECRET, *_PASSWORD ...) are replaced
  wherever they appear;
- strings shaped like credentials are replaced whatever their source: OpenAI/Anthropic-style `sk-...` keys,
  `Bearer ...` tokens, Hugging Face `hf_...` tokens, GitHub `ghp_`/`github_pat_` tokens, Slack `xox?-` tokens,
  AWS access key ids, JSON web tokens and PEM private key blocks.

Pure: the caller passes the environment mapping; nothing here reads it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 6  # shorter values ("1", "true") would redact ordinary text and protect nothing

_SECRET_NAME = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|PRIVATE_KEY|AUTH)$", re.I)
_PATTERNS = (
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S),
    re.compile(r"(?<![a-z])(?:sk|rk|pk)-[A-Za-z0-9_\-]{16,}"),  # not glued to a word: "task-..." stays
    re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=\-]{6,}", re.I),
    re.compile(r"\bhf_[A-Za-z0-9]{10,}"),
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"),
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
)


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def secret_values(environ: Mapping[str, str]) -> tuple[str, ...]:
    """Values of the secret-named variables in `environ`, longest first (so a value containing another is
    replaced whole)."""
    values = {v for k, v in environ.items() if is_secret_name(k) and len(v.strip()) >= MIN_SECRET_CHARS}
    return tuple(sorted(values, key=lambda v: (-len(v), v)))


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every secret value and every credential-shaped string replaced by [redacted]."""
    for value in secrets:
        if len(value) >= MIN_SECRET_CHARS and value in text:
            text = text.replace(value, REDACTED)
    for pattern in _PATTERNS:
        text = pattern.sub(REDACTED, text)
    return text


def cap(text: str, chars: int) -> str:
    """At most `chars` characters (plus a note saying how many were cut)."""
    if len(text) <= chars:
        return text
    return text[:chars] + f"... [{len(text) - chars} more characters cut]"


def scrub_capped(text: str, chars: int, secrets: Iterable[str] = ()) -> str:
    """Scrub, then cap (scrubbing first so a secret cut in half by the cap is still caught)."""
    return cap(scrub(text, secrets), chars)
