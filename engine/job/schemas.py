"""JSON Schemas of the job artifacts, exported from core.artifacts and committed under `schemas/`.

`python -m engine.job.schemas [DIR]` (re)writes them (default: the repository's schemas/); tests/engine/
test_artifact_schemas.py checks that the committed files equal this export and that every artifact of a real job
validates against them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from core.artifacts import ARTIFACT_SCHEMA_VERSION, ARTIFACTS, SEALED
from engine.job.artifacts import write_json_atomic

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schemas"
SHA256 = {"type": "string", "pattern": "^[0-9a-f]{64}$",
          "description": "sha256 of the canonical JSON of every other top-level field (core.canonical.seal)"}


def artifact_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of one artifact as it is on disk (a sealed one carries its top-level sha256)."""
    schema = ARTIFACTS[name].model_json_schema(by_alias=True, mode="serialization")
    schema["$id"] = f"mas-promptbench/{name}.v{ARTIFACT_SCHEMA_VERSION}.schema.json"
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    if name in SEALED:
        schema["properties"]["sha256"] = SHA256
        schema["required"] = [*schema.get("required", []), "sha256"]
    return schema


def schema_file(name: str, directory: Path = SCHEMA_DIR) -> Path:
    return directory / f"{name}.schema.json"


def write_schemas(directory: Path = SCHEMA_DIR) -> list[Path]:
    paths = []
    for name in ARTIFACTS:
        write_json_atomic(schema_file(name, directory), artifact_schema(name))
        paths.append(schema_file(name, directory))
    return paths


if __name__ == "__main__":
    for written in write_schemas(Path(sys.argv[1]) if len(sys.argv) > 1 else SCHEMA_DIR):
        print(written)
