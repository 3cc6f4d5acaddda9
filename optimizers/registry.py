"""Methods register by name; `--method` picks one."""

from __future__ import annotations

from typing import Any, Callable

from core.errors import UsageError
from core.optimizer import Optimizer
from optimizers.identity import Identity

METHODS: dict[str, Callable[..., Any]] = {"identity": Identity}


def get_optimizer(name: str, **kwargs: Any) -> Optimizer:
    try:
        factory = METHODS[name]
    except KeyError:
        raise UsageError(f"unknown method {name!r}; known methods: {', '.join(sorted(METHODS))}") from None
    return factory(**kwargs) if kwargs else factory()
