"""The optimizer is built once, before anything is written (its smallest useful budget is checked on bad input),
but its recorded model clients need the job's store. It therefore holds these forwarding clients from
construction; run_job binds each to its recorded client (engine.reflection) once the store is open."""

from __future__ import annotations

from typing import Any

from core.errors import ArtifactError
from optimizers.registry import task_model_components, uses_reflection


class LateClient:
    """core.optimizer.ReflectionModel / ModelClient forwarding to the client bound later."""

    def __init__(self, component: str):
        self.component = component
        self._target: Any = None

    def bind(self, target: Any) -> None:
        self._target = target

    @property
    def bound(self) -> bool:
        return self._target is not None

    def _client(self) -> Any:
        if self._target is None:
            raise ArtifactError(f"the optimizer's {self.component} client was used before the job's store opened")
        return self._target

    async def propose(self, prompt: str, **kwargs: Any) -> Any:
        return await self._client().propose(prompt, **kwargs)

    async def complete(self, messages: list[dict[str, str]], **kwargs: Any) -> Any:
        return await self._client().complete(messages, **kwargs)

    def usage(self) -> Any:
        return self._client().usage()

    @property
    def replayed_calls(self) -> int:
        """The bound client's calls answered from the store (0 before it is bound)."""
        return int(getattr(self._target, "replayed_calls", 0)) if self._target is not None else 0

    def failures(self) -> dict[str, int]:
        """The bound client's calls without usable text by kind ({} before it is bound)."""
        return dict(self._target.failures()) if self._target is not None else {}


def late_clients(method: str) -> dict[str, LateClient]:
    """One forwarding client per component the method declares (none for a method without reflection)."""
    if not uses_reflection(method):
        return {}
    return {name: LateClient(name) for name in ("reflection", *task_model_components(method))}
