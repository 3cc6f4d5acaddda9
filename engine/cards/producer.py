"""The producer block of a manifest: this engine's name and version (no commit, no clock: exports stay
byte-identical)."""

from __future__ import annotations

import importlib.metadata
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any

NAME = "mas-promptbench-engine"


@lru_cache(maxsize=1)
def version() -> str:
    try:
        return importlib.metadata.version(NAME)
    except importlib.metadata.PackageNotFoundError:
        pass
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        return str(tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


def producer() -> dict[str, Any]:
    return {"name": NAME, "version": version()}
