"""The reporting rules a card knows by name: the registry of engine/cards/rules.py filled with the built-in
rules (engine/cards/builtin_rules.py registers them on import), so the rule kit never imports its rules."""

from __future__ import annotations

import engine.cards.builtin_rules  # noqa: F401  (registers the built-in rules)
from core.errors import UsageError
from engine.cards.rules import RULES, Rule


def get_rule(name: str) -> Rule:
    base = name.split("@", 1)[0]
    rule = RULES.get(base)
    if rule is None or (name != base and name != rule.rule_id):
        raise UsageError(f"unknown reporting rule {name!r}; known: {', '.join(sorted(RULES))}")
    return rule


def all_rules() -> list[Rule]:
    return [RULES[n] for n in sorted(RULES)]
