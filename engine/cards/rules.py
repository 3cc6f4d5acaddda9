"""The reporting-rule registry (spec 3.2, E.2, 4.5): each rule has a name, a version, an implementation reference
with the sha256 of its source module, a config, a view, its input streams and output target, the structural
collapses and semantic losses its author declares. Rules register by name in a plain dict; the built-in ones are
in `engine.cards.builtin_rules`."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from core.canonical import sha256_hex
from core.errors import UsageError
from engine.cards.reader import CardReader, Footprint

Status = Literal["ok", "missing_field", "not_applicable", "no_data"]


@dataclass(frozen=True)
class RuleResult:
    """A rule's output: its numbers (`values`), per-arm denominators and failure counts, and whether it could be
    computed from the card at all (`status` other than ok comes with a message saying what the card lacks)."""

    status: Status
    values: dict[str, Any] = field(default_factory=dict)
    arms: dict[str, dict[str, Any]] = field(default_factory=dict)
    message: str | None = None


Compute = Callable[[CardReader, Footprint, Mapping[str, Any]], RuleResult]


@dataclass(frozen=True)
class Rule:
    name: str
    version: str
    kind: Literal["original", "recovered", "regrade", "diagnostic"]
    description: str
    view: str
    metric: str
    input_streams: tuple[str, ...]
    config: Mapping[str, Any]
    compute: Compute
    collapses: tuple[str, ...] = ()
    semantic_losses: tuple[Mapping[str, str], ...] = ()

    @property
    def rule_id(self) -> str:
        return f"{self.name}@{self.version}"

    def implementation(self) -> dict[str, str]:
        module = sys.modules[self.compute.__module__]
        return {"ref": f"{self.compute.__module__}:{self.compute.__qualname__}", "version": self.version,
                "sha256": sha256_hex(inspect.getsource(module))}


RULES: dict[str, Rule] = {}


def register(rule: Rule) -> Rule:
    if rule.name in RULES:
        raise ValueError(f"reporting rule {rule.name!r} registered twice")
    RULES[rule.name] = rule
    return rule


def get_rule(name: str) -> Rule:
    import engine.cards.builtin_rules  # noqa: F401  (registers the built-in rules)

    base = name.split("@", 1)[0]
    rule = RULES.get(base)
    if rule is None or (name != base and name != rule.rule_id):
        raise UsageError(f"unknown reporting rule {name!r}; known: {', '.join(sorted(RULES))}")
    return rule


def all_rules() -> list[Rule]:
    import engine.cards.builtin_rules  # noqa: F401

    return [RULES[n] for n in sorted(RULES)]
