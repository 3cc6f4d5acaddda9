"""Seed prompt files: topologies/prompts/<topology>/<dataset>/<role>.txt. They form the frozen seed bundle."""

from __future__ import annotations

from pathlib import Path

from core.errors import DataError
from core.models import PromptBundle

PROMPT_ROOT = Path(__file__).parent / "prompts"


def seed_bundle(topology: str, task: str, roles: list[str]) -> PromptBundle:
    texts = {}
    for role in roles:
        path = PROMPT_ROOT / topology / task / f"{role}.txt"
        if not path.is_file():
            raise DataError(f"missing seed prompt file {path.relative_to(PROMPT_ROOT.parent)}")
        texts[role] = path.read_text(encoding="utf-8").strip()
    return PromptBundle(roles=texts, metadata={"source": f"topologies/prompts/{topology}/{task}"})
