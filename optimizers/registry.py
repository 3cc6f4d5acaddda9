"""Methods register by name; `--method` picks one.

A method class takes `(seed=..., reflection=...)` keyword arguments when it declares `uses_reflection = True`
(the engine then wires its reflection client); other methods are built without arguments. A method that also
declares `task_model_components` (e.g. ("judge", "probe")) gets one recorded, uncharged client per component on
the TASK endpoints as keyword arguments of those names (core.optimizer.ModelClient).
"""

from __future__ import annotations

from typing import Any, Callable

from core.errors import UsageError
from core.optimizer import Optimizer, ReflectionModel
from optimizers.gepa import Gepa
from optimizers.identity import Identity
from optimizers.mapro import Mapro
from optimizers.maspo import Maspo
from optimizers.mipro import Mipro

METHODS: dict[str, Callable[..., Any]] = {"identity": Identity, "gepa": Gepa, "mipro": Mipro, "mapro": Mapro,
                                          "maspo": Maspo}


def uses_reflection(name: str) -> bool:
    return bool(getattr(METHODS.get(name), "uses_reflection", False))


def task_model_components(name: str) -> tuple[str, ...]:
    return tuple(getattr(METHODS.get(name), "task_model_components", ()))


def method_implementation_id(name: str) -> str | None:
    """`<method>:native:v<N>` for a method that declares `implementation_version` N > 1 (its behaviour changed:
    MAPRO's demos, MASPO's MATH templates), recorded in job.json so that a job started by the earlier
    implementation is not resumed by this one; None (absent from job.json, identity unchanged) otherwise."""
    version = int(getattr(METHODS.get(name), "implementation_version", 1))
    return f"{name}:native:v{version}" if version > 1 else None


def get_optimizer(name: str, *, seed: int = 0, reflection: ReflectionModel | None = None,
                  **kwargs: Any) -> Optimizer:
    try:
        factory = METHODS[name]
    except KeyError:
        raise UsageError(f"unknown method {name!r}; known methods: {', '.join(sorted(METHODS))}") from None
    if getattr(factory, "uses_reflection", False):
        return factory(seed=seed, reflection=reflection, **kwargs)  # type: ignore[no-any-return]
    return factory(**kwargs) if kwargs else factory()  # type: ignore[no-any-return]


def smallest_budget(optimizer: Optimizer, n_train: int, n_validation: int) -> int:
    """Protocol 8.9: the smallest budget that scores one proposal, for these split sizes when the method's
    smallest budget depends on them (`smallest_budget(n_train, n_validation)`), else its fixed one."""
    sized = getattr(optimizer, "smallest_budget", None)
    return int(sized(n_train, n_validation)) if callable(sized) else optimizer.smallest_useful_budget
