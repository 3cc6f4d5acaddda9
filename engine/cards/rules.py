"""The reporting-rule registry (spec 3.2, E.2, 4.5): each rule has a name, a version, an implementation reference
with the sha256 of its code closure, a config, a view, its input streams and output target, the structural
collapses and semantic losses its author declares. Rules register by name in a plain dict; the built-in ones are
in `engine.cards.builtin_rules`, looked up by name through `engine.cards.rule_table`."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from types import CodeType
from typing import Any, Literal

import core.blobs  # noqa: F401  (in every rule's closure: READER_MODULES)
import engine.cards.format.lines  # noqa: F401
import engine.cards.format.model  # noqa: F401
from core.canonical import content_hash
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


class MissingField(Exception):
    """Raised by a rule that meets a value it needs but the card does not hold (redacted, never recorded);
    `run_rule` turns it into a `missing_field` result that says which."""


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
        """`sha256` covers this rule's code closure (see `code_closure`) and its config: two rules sharing a
        module hash differently, and an edit to a helper only some rules call changes only their hashes."""
        sources = code_closure(self.compute)
        return {"ref": f"{self.compute.__module__}:{self.compute.__qualname__}", "version": self.version,
                "sha256": content_hash({"code": sources, "config": dict(self.config), "rule": self.rule_id})}


CLOSURE_PACKAGES = ("engine.", "core.")
# Every rule reads the card through these; their code is part of every rule's closure.
READER_MODULES = ("engine.cards.reader", "engine.cards.format.model", "engine.cards.format.lines", "core.blobs")


def _referenced(code: CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, CodeType):
            names |= _referenced(const)
    return names


@lru_cache(maxsize=None)
def code_closure(entry: Callable[..., Any]) -> dict[str, str]:
    """Qualified name -> source of `entry`, of every function or class of this project it references through
    module globals (transitively), and of the reader modules every rule reads through."""
    found: dict[str, str] = {}
    stack: list[Any] = [entry]
    while stack:
        obj = stack.pop()
        name = f"{obj.__module__}:{obj.__qualname__}"
        if name in found:
            continue
        found[name] = inspect.getsource(obj)
        codes = [obj.__code__] if inspect.isfunction(obj) else [
            m.__code__ for m in vars(obj).values() if inspect.isfunction(m)]
        module_globals = vars(sys.modules[obj.__module__])
        for code in codes:
            for ref in sorted(_referenced(code)):
                target = module_globals.get(ref)
                if (inspect.isfunction(target) or inspect.isclass(target)) and str(
                        getattr(target, "__module__", "")).startswith(CLOSURE_PACKAGES):
                    stack.append(target)
    for module in READER_MODULES:
        found[module] = inspect.getsource(sys.modules[module])
    return dict(sorted(found.items()))


RULES: dict[str, Rule] = {}


def register(rule: Rule) -> Rule:
    if rule.name in RULES:
        raise ValueError(f"reporting rule {rule.name!r} registered twice")
    RULES[rule.name] = rule
    return rule

