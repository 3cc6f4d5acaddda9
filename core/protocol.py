"""Frozen constants of protocol mas-promptbench-v1 and the identities derived from them (section 5.6)."""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel, ConfigDict

from core.canonical import content_hash
from core.frameworks import FRAMEWORK_TABLE
from core.seeds import TURN_HASH_SCHEME, member_seed_scheme

PROTOCOL_ID: Final = "mas-promptbench-v1"  # the one definition (Final: its type is the literal JobResult names)
FULL_BUDGET = 600
MAX_INFRA_RETRIES = 2  # 3 attempts at most, same request seed
# Section 5.6: the condition names the runtime implementation that ran it. `native` is this project's own anyio
# runtime (topologies/); the others are this project's framework runtimes (topologies/frameworks/: the framework's own agents
# and graph, their model calls through the recording gateway). One id per framework, declared in its entry of the
# framework table (core/frameworks.py).
RUNTIME_IMPLEMENTATION_IDS: dict[str, str] = {name: spec.runtime_implementation_id
                                              for name, spec in FRAMEWORK_TABLE.items()}
CANONICAL_REFLECTION_MODEL = "Qwen/Qwen3.5-122B-A10B-FP8"
TASK_MODELS = {"qwen": "Qwen/Qwen3.5-9B", "llama": "meta-llama/Llama-3.1-8B-Instruct"}
PAIRED_SEED_SCHEMA = "paired-evaluation-seed"

# sampling parameters a framework runtime's requests go without (section 2.5: "SDK runners omit
# repetition_penalty"); the recording gateway drops them from the protocol's decoding for that framework
FRAMEWORK_OMITTED_PARAMS: dict[str, tuple[str, ...]] = {"openai_agents": ("repetition_penalty",)}
REPETITION_PENALTY = 1.05


class Decoding(BaseModel):
    """One decoding of the protocol: the sampling knobs every request of a kind sends, explicitly (the request seed
    is per call, derived by the recorder). `repetition_penalty` None: the request goes without one (the reflection
    model; a framework whose runner omits it drops it at the gateway, FRAMEWORK_OMITTED_PARAMS). The frozen
    protocol constants hash `protocol_json()`: the four knobs, the repetition penalty being its own constant."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    temperature: float
    top_p: float
    max_tokens: int
    thinking: bool
    repetition_penalty: float | None

    def protocol_json(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens,
                "thinking": self.thinking}


OPTIMIZATION_DECODING = Decoding(temperature=0.2, top_p=0.9, max_tokens=32768, thinking=False,
                                 repetition_penalty=REPETITION_PENALTY)
EVALUATION_DECODING = Decoding(temperature=0.0, top_p=0.9, max_tokens=32768, thinking=False,
                               repetition_penalty=REPETITION_PENALTY)
REFLECTION_DECODING = Decoding(temperature=1.0, top_p=1.0, max_tokens=48000, thinking=True, repetition_penalty=None)
REFLECTION_TIMEOUT_S = 1800.0

PROTOCOL_CONSTANTS: dict[str, Any] = {
    "protocol_id": PROTOCOL_ID,
    "budget": FULL_BUDGET,
    "max_infra_retries": MAX_INFRA_RETRIES,
    "charged_statuses": ["success", "semantic_failure"],
    "optimization_decoding": OPTIMIZATION_DECODING.protocol_json(),
    "evaluation_decoding": EVALUATION_DECODING.protocol_json(),
    "reflection_decoding": REFLECTION_DECODING.protocol_json(),
    "repetition_penalty": REPETITION_PENALTY,
    "selection_rule": "strictly_better_on_validation",
    "paired_seed_schema": PAIRED_SEED_SCHEMA,
    "seed_offsets": {"0": 0, "1": 1000, "2": 2000},
    "bootstrap": {"replicates": 10000, "rng": "random.Random(0)"},
}
PROTOCOL_HASH = content_hash(PROTOCOL_CONSTANTS)


def runtime_implementation_id(framework: str) -> str:
    """The id of the runtime implementation that runs cells of `framework` (section 5.6)."""
    try:
        return FRAMEWORK_TABLE[framework].runtime_implementation_id
    except KeyError:
        raise ValueError(f"no runtime implementation for framework {framework!r}") from None


def split_hash(splits_payload: dict[str, Any]) -> str:
    """Content hash of {dataset, train, validation, test}."""
    return content_hash(splits_payload)


def cell_id(
    *,
    method: str,
    task: str,
    topology: str,
    framework: str,
    communication: str,
    team_size: int,
    task_model: str,
    reflection_model: str,
    optimizer_seed: int,
    split_sha256: str,
    budget: int,
) -> str:
    return content_hash(
        {
            "protocol_id": PROTOCOL_ID,
            "protocol_hash": PROTOCOL_HASH,
            "method": method,
            "task": task,
            "topology": topology,
            "framework": framework,
            "communication": communication,
            "team_size": team_size,
            "task_model": task_model,
            "reflection_model": reflection_model,
            "optimizer_seed": optimizer_seed,
            "split_hash": split_sha256,
            "budget": budget,
        }
    )[:24]


def condition(
    *,
    task: str,
    topology: str,
    framework: str,
    communication: str,
    team_size: int,
    task_model: str,
    initial_bundle_sha256: str,
    scorer_id: str,
    split_sha256: str,
    contract_version: int = 1,
    tool_environment: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The method-independent runtime condition; `condition_id` = its content hash. The output-contract version
    (1 for baseline runs, 2 for jobs) and what the tools read change the requests, so both are part of it.

    The seeds of a team's members change the requests too: a topology whose members are replicas (Independent,
    section 2.2) records `member_seed_scheme` (core.seeds); the other topologies' members keep the turn-hash
    scheme, which the condition leaves implicit so that their condition_ids (and their recorded, cached
    evaluations) are the ones they were before replica seeds."""
    cond: dict[str, Any] = {
        "schema": "mas-promptbench-condition/v1",
        "protocol_id": PROTOCOL_ID,
        "task": task,
        "topology": topology,
        "framework": framework,
        "communication": communication,
        "team_size": team_size,
        "task_model": task_model,
        "runtime_implementation_id": runtime_implementation_id(framework),
        "initial_bundle_sha256": initial_bundle_sha256,
        "evaluation_decoding": EVALUATION_DECODING.protocol_json(),
        "scorer_id": scorer_id,
        "split_sha256": split_sha256,
        "paired_seed_schema": PAIRED_SEED_SCHEMA,
        "output_contract_version": contract_version,
        "tool_environment": tool_environment,
    }
    scheme = member_seed_scheme(topology)
    if scheme != TURN_HASH_SCHEME:
        cond["member_seed_scheme"] = scheme
    return cond


def evaluation_identity(
    *,
    cond: dict[str, Any],
    split: str,
    evaluation_seed: int,
    bundle_sha256: str,
    ordered_example_ids: list[str],
    rows_sha256: str,
) -> dict[str, Any]:
    """Content-addressed evaluation identity (phase not included: cache hits across phases and methods)."""
    ident = {
        "schema": "mas-promptbench-evaluation/v1",
        "condition": cond,
        "condition_id": content_hash(cond),
        "split": split,
        "evaluation_seed": evaluation_seed,
        "bundle_sha256": bundle_sha256,
        "ordered_example_ids": list(ordered_example_ids),
        "rows_sha256": rows_sha256,
        "evaluation_seed_identity": PAIRED_SEED_SCHEMA,
    }
    return {**ident, "evaluation_id": content_hash(ident)[:32]}
