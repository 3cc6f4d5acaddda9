"""What leaves the sandbox as text (scorer feedback, tool results): capped and scrubbed of secrets.

`redact` applies core.scrub with the secret values of this process's environment, read at call time, so a key
set after start-up (or only in the engine's environment) is still recognised.
"""

from __future__ import annotations

import os

from core.scrub import scrub_capped, secret_values

FEEDBACK_CHARS = 2_000


def redact(text: str, chars: int = FEEDBACK_CHARS) -> str:
    return scrub_capped(text, chars, secret_values(os.environ))
