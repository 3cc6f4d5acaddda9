"""Shared evaluations across jobs and processes (protocol 5.3: "concurrent jobs share evaluations via file locks").

An evaluation is content-addressed (core/protocol.py `evaluation_identity`: condition, split, evaluation seed,
bundle, ordered ids, rows hash); the seed bundle's validation and test evaluations of a condition and seed are
therefore the same for every method. The first job to need one takes `DIR/<id>.lock` (fcntl, so it holds across
processes and across jobs in one process), runs it against the endpoints and records every model response by its
request key into `DIR/<id>.json` (written atomically). Every later job takes the lock, finds the file and runs the
same rollouts against a pool that answers from those responses: no endpoint request, while its own store and
card still hold every rollout, call and score (and an `mpb.shared_evaluation` annotation naming the source).
A response the file lacks goes to the live endpoint.

An evaluation in which some rollout ended as an infrastructure failure is not an answer, but the model responses
it did get are: they are saved with `complete: false`, and the next job to need the evaluation replays them and
sends only what is missing (a request the endpoint answered is never sent again), then saves the union, complete
once every rollout is usable. Only a complete file is "shared"; a job that extends a partial one says "extended".

While a job computes, every new response is also appended to `DIR/<id>.journal.jsonl` (flushed per response, so it
survives a kill -9 of the process); the next job to take the lock reads the journal with the file, so a sweep killed
in the middle of a shared evaluation never sends again a request that was answered before the kill (whichever job
resumes the evaluation). The journal is merged into the file and removed when the evaluation is saved.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from core.canonical import canonical_json, content_hash, sha256_hex
from core.errors import ArtifactError
from core.models import RolloutRecord

SCHEMA = "mas-promptbench-shared-evaluation/v1"
LOCK_POLL_S = 0.05


class _Pool:
    """The job's pool seen through recorded responses: a request whose response is recorded is answered from it,
    any other goes to the live (outage-aware) pool and its answer is recorded."""

    def __init__(self, live: Any, responses: dict[str, Any], recorded: dict[str, Any],
                 journal: Callable[[str, Any], None] = lambda key, response: None):
        self._live, self._responses, self._recorded, self._journal = live, responses, recorded, journal
        self.endpoints = live.endpoints
        self.hits = 0
        self.misses = 0

    async def chat(self, body: dict[str, Any], encoded: str | None = None) -> tuple[dict[str, Any], float]:
        key = content_hash(body) if encoded is None else sha256_hex(encoded)
        if key in self._responses:
            self.hits += 1
            return self._responses[key], 0.0
        self.misses += 1
        response, latency = await self._live.chat(body, encoded)
        self._recorded[key] = response
        self._journal(key, response)
        return response, latency

    @property
    def model_id(self) -> str:
        return str(self._live.model_id)

    @property
    def capacity(self) -> int:
        return int(self._live.capacity)


class EvaluationCache:
    def __init__(self, directory: Path, owner: str = ""):
        self.dir = directory
        self.owner = owner  # who computes (the job key), recorded as provenance

    def for_job(self, owner: str) -> "EvaluationCache":
        return EvaluationCache(self.dir, owner)

    @asynccontextmanager
    async def _hold(self, evaluation_id: str) -> AsyncIterator[None]:
        self.dir.mkdir(parents=True, exist_ok=True)
        fh = open(self.dir / f"{evaluation_id}.lock", "a+")
        try:
            while True:
                try:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    await anyio.sleep(LOCK_POLL_S)  # cancellable; never blocks the event loop
            yield
        finally:
            fh.close()  # releases the lock

    def _load(self, evaluation_id: str, identity: dict[str, Any]) -> dict[str, Any] | None:
        path = self.dir / f"{evaluation_id}.json"
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ArtifactError(f"shared evaluation {path} is unreadable: {exc}") from exc
        if data.get("identity") != identity:
            raise ArtifactError(f"shared evaluation {path} has a different identity")
        return dict(data)

    def _save(self, evaluation_id: str, identity: dict[str, Any], responses: dict[str, Any], complete: bool,
              computed_by: str) -> None:
        path = self.dir / f"{evaluation_id}.json"
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(canonical_json({"schema": SCHEMA, "evaluation_id": evaluation_id, "identity": identity,
                                       "computed_by": computed_by, "complete": complete, "responses": responses}),
                       encoding="utf-8")
        os.replace(tmp, path)

    def _journal(self, evaluation_id: str) -> Path:
        return self.dir / f"{evaluation_id}.journal.jsonl"

    def _load_journal(self, evaluation_id: str) -> dict[str, Any]:
        """Responses a killed computation journaled (a torn last line is what the kill cut: skipped)."""
        path = self._journal(evaluation_id)
        found: dict[str, Any] = {}
        if path.exists():
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    entry = json.loads(line)
                    found[str(entry["key"])] = entry["response"]
                except (ValueError, KeyError, TypeError):
                    continue
        return found

    async def evaluate(self, evaluation_id: str, identity: dict[str, Any], pool: Any,
                       run: Callable[[Any], Awaitable[list[RolloutRecord]]]
                       ) -> tuple[list[RolloutRecord], dict[str, Any]]:
        async with self._hold(evaluation_id):
            found = await anyio.to_thread.run_sync(self._load, evaluation_id, identity)
            shared = found is not None and found.get("complete", True)  # files before `complete` were complete
            journaled = {} if shared else await anyio.to_thread.run_sync(self._load_journal, evaluation_id)
            responses: dict[str, Any] = {**(found["responses"] if found else {}), **journaled}
            recorded: dict[str, Any] = {}
            with open(self._journal(evaluation_id), "a", encoding="utf-8") as journal:
                def append(key: str, response: Any) -> None:
                    journal.write(json.dumps({"key": key, "response": response}, separators=(",", ":")) + "\n")
                    journal.flush()  # in the OS's hands: a kill -9 of this process loses nothing

                endpoint = _Pool(pool, responses, recorded, append)
                records = await run(endpoint)
            complete = all(r.usable for r in records)  # an infra failure is not an answer; its neighbours' are
            recorded = {**journaled, **recorded}
            save = not shared and (bool(recorded) or complete)  # new answers, or the news that it is complete
            computed_by = found["computed_by"] if found else self.owner
            if save:
                await anyio.to_thread.run_sync(self._save, evaluation_id, identity, {**responses, **recorded},
                                               complete, computed_by)
            self._journal(evaluation_id).unlink(missing_ok=True)
        provenance = {"source": "shared" if shared else "extended" if found else "computed",
                      "computed_by": computed_by, "calls_from_cache": endpoint.hits, "calls_live": endpoint.misses,
                      "saved": save, "complete": complete}
        return records, provenance
