"""The implemented methods, built from the method table (core/methods.py); `--method` picks one.

A method is registered once, as a `MethodSpec` in core/methods.py `METHOD_TABLE`; its `factory`
(`"module:attribute"`) is imported here. `METHODS` maps every implemented method's name to its class. A method
whose spec says `uses_reflection` is built with `(seed=..., reflection=...)` keyword arguments (the engine then
wires its reflection client) and, for each of its `task_model_components` (e.g. ("judge", "probe")), one recorded,
uncharged client on the TASK endpoints as a keyword argument of that name (core.optimizer.ModelClient); other
methods are built without arguments. A name in `METHODS` without a spec (a test's stand-in) has no capabilities.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from core.errors import UsageError
from core.methods import METHOD_TABLE, MethodSpec, check_method, implemented_methods
from core.optimizer import Optimizer, ReflectionModel, SizedBudget


def load_factory(spec: MethodSpec) -> Callable[..., Any]:
    """The class a spec's `factory` names (`module:attribute`)."""
    if spec.factory is None:
        raise UsageError(f"method {spec.name!r} is not implemented by this engine")
    module_name, _, attribute = spec.factory.partition(":")
    factory: Callable[..., Any] = getattr(importlib.import_module(module_name), attribute)
    return factory


METHODS: dict[str, Callable[..., Any]] = {name: load_factory(METHOD_TABLE[name]) for name in implemented_methods()}


def implemented() -> tuple[str, ...]:
    """The names `get_optimizer` builds: `METHODS` (built at import) and every implemented spec registered since."""
    return tuple(dict.fromkeys((*METHODS, *implemented_methods())))


def _spec(name: str) -> MethodSpec:
    return METHOD_TABLE.get(name) or MethodSpec(name, help="")


def uses_reflection(name: str) -> bool:
    return _spec(name).uses_reflection


def task_model_components(name: str) -> tuple[str, ...]:
    return _spec(name).task_model_components


def method_implementation_id(name: str) -> str | None:
    """`<method>:native:v<N>` for a method whose class declares `implementation_version` N > 1 (its behaviour
    changed: MAPRO's demos, MASPO's MATH templates), recorded in job.json so that a job started by the earlier
    implementation is not resumed by this one; None (absent from job.json, identity unchanged) otherwise. The
    version stays on the class: it changes with the code, not with the registration."""
    version = int(getattr(METHODS.get(name), "implementation_version", 1))
    return f"{name}:native:v{version}" if version > 1 else None


def get_optimizer(name: str, *, seed: int = 0, reflection: ReflectionModel | None = None,
                  **kwargs: Any) -> Optimizer:
    factory = METHODS.get(name)
    if factory is None:  # a method registered after this module was imported (a test's), else an unknown one
        factory = load_factory(METHOD_TABLE[check_method(name)])
    if uses_reflection(name):
        return factory(seed=seed, reflection=reflection, **kwargs)  # type: ignore[no-any-return]
    return factory(**kwargs) if kwargs else factory()  # type: ignore[no-any-return]


def smallest_budget(optimizer: Optimizer, n_train: int, n_validation: int) -> int:
    """Protocol 8.9: the smallest budget that scores one proposal, for these split sizes when the method's
    smallest budget depends on them (core.optimizer `SizedBudget`), else its fixed one."""
    if isinstance(optimizer, SizedBudget):
        return int(optimizer.smallest_budget(n_train, n_validation))
    return optimizer.smallest_useful_budget
