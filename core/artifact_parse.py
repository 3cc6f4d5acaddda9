"""Decoded JSON as a typed job artifact (core/artifacts.py), pure: the job reads its artifacts with it and the
card export checks the artifacts a card carries with it, so neither reaches into the other."""

from __future__ import annotations

from typing import Any, TypeVar

import pydantic

from core.artifacts import Artifact
from core.errors import ArtifactError

A = TypeVar("A", bound=Artifact)


def parse_artifact(model: type[A], data: Any, name: str) -> A:
    """`data` (decoded JSON, without its seal) as `model`; ArtifactError naming the first bad field otherwise."""
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise ArtifactError(f"artifact {name} does not match its schema at {where}: {first['msg']}") from None
