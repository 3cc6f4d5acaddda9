"""Methods register by name; `--method` picks one.

A method class takes `(seed=..., reflection=...)` keyword arguments when it declares `uses_reflection = True`
(the engine then wires its reflection client); other methods are built without arguments.
"""

from __future__ import annotations

from typing import Any, Callable

from core.errors import UsageError
from core.optimizer import Optimizer, ReflectionModel
from optimizers.gepa import Gepa
from optimizers.identity import Identity
from optimizers.mipro import Mipro

METHODS: dict[str, Callable[..., Any]] = {"identity": Identity, "gepa": Gepa, "mipro": Mipro}


def uses_reflection(name: str) -> bool:
    return bool(getattr(METHODS.get(name), "uses_reflection", False))


def get_optimizer(name: str, *, seed: int = 0, reflection: ReflectionModel | None = None,
                  **kwargs: Any) -> Optimizer:
    try:
        factory = METHODS[name]
    except KeyError:
        raise UsageError(f"unknown method {name!r}; known methods: {', '.join(sorted(METHODS))}") from None
    if getattr(factory, "uses_reflection", False):
        return factory(seed=seed, reflection=reflection, **kwargs)  # type: ignore[no-any-return]
    return factory(**kwargs) if kwargs else factory()  # type: ignore[no-any-return]
