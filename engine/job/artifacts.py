"""Atomic JSON artifacts and sealed artifacts (payload + sha256 of the payload, verified on read)."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from core.artifact_parse import parse_artifact
from core.artifacts import Artifact
from core.canonical import seal, verify_seal
from core.errors import ArtifactError

A = TypeVar("A", bound=Artifact)


def write_json_atomic(path: Path, value: Any) -> None:
    """Write to a temporary file in the same directory, fsync, then rename over the target."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(value, fh, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_jsonl_atomic(path: Path, rows: list[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:  # a full disk leaves no half-written temporary behind
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ArtifactError(f"missing artifact {path.name}") from None
    except json.JSONDecodeError as exc:
        raise ArtifactError(f"artifact {path.name} is not valid JSON ({exc.msg})") from None


def write_sealed(path: Path, payload: dict[str, Any]) -> dict[str, Any]:
    sealed = seal(payload)
    write_json_atomic(path, sealed)
    return sealed


def read_sealed(path: Path) -> dict[str, Any]:
    data = read_json(path)
    if not isinstance(data, dict) or not verify_seal(data):
        raise ArtifactError(f"sealed artifact {path.name} failed its sha256 check (tampered or torn)")
    return data


@dataclass(frozen=True)
class Sealed(Generic[A]):
    """A sealed artifact as a phase returns it: the typed payload and the sha256 it was sealed with."""

    artifact: A
    sha256: str


def write_artifact(path: Path, artifact: A) -> Sealed[A]:
    """Seal and write atomically; the file holds exactly `artifact.to_json()` plus its sha256."""
    sealed = write_sealed(path, artifact.to_json())
    return Sealed(artifact, sealed["sha256"])


def read_artifact(path: Path, model: type[A]) -> Sealed[A]:
    """A sealed artifact whose sha256 verifies, validated against its model."""
    data = read_sealed(path)
    body = {k: v for k, v in data.items() if k != "sha256"}
    return Sealed(parse_artifact(model, body, path.name), data["sha256"])
