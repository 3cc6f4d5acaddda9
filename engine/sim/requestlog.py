"""The simulated endpoint's request log: every request, in arrival order, in memory and optionally as JSON lines.

Entry fields: index, key (logical request key or null for unparsable bodies), row_id, seed, model,
status (HTTP status code, or "reset" / "slow"), fault (kind or null), occurrence (0-based count of this key),
kind (what the policy did: reflection | tool_followup | no_match | analysis | answer | null), mode (failure mode
of an answer, or null).

The in-memory log is guarded by a lock, so a test thread may read copies while the server thread appends. The
JSONL file is flushed per line so another process can follow it while a job runs.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path
from typing import IO, Any


class RequestLog:
    def __init__(self, path: str | Path | None = None) -> None:
        self._lock = threading.Lock()
        self._entries: list[dict[str, Any]] = []
        self._key_counts: Counter[str] = Counter()
        self._row_counts: Counter[str] = Counter()
        self.path = Path(path) if path is not None else None
        self._file: IO[str] | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8")

    def reserve(self, key: str | None, row_id: str | None) -> tuple[int, int, int | None]:
        """Assign (index, key occurrence, row occurrence) for an arriving request; call once per request."""
        with self._lock:
            index = len(self._entries)
            occurrence = 0
            if key is not None:
                occurrence = self._key_counts[key]
                self._key_counts[key] += 1
            row_occurrence = None
            if row_id is not None:
                row_occurrence = self._row_counts[row_id]
                self._row_counts[row_id] += 1
            # Placeholder keeps indices dense and in arrival order; `record` fills it in.
            self._entries.append({"index": index})
            return index, occurrence, row_occurrence

    def record(self, entry: dict[str, Any]) -> None:
        """Store the full entry for a reserved index and append it to the JSONL file."""
        line = None if self._file is None else json.dumps(entry, sort_keys=True, ensure_ascii=False)
        with self._lock:
            self._entries[entry["index"]] = dict(entry)
            if self._file is not None:
                self._file.write(f"{line}\n")
                self._file.flush()

    def entries(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(e) for e in self._entries]

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


def read_log_file(path: str | Path) -> list[dict[str, Any]]:
    """Parse a request-log JSONL file (skips a partially written last line)."""
    entries = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return entries
