"""The typed reader that logs access (spec 4.7). Reporting rules read a card only through it.

Rows are validated against their stream's schema and blob references are resolved on load. Every value a rule
reads is logged as (stream, row, field path): a leaf when a scalar is read, the container's path when a whole
dict/list is materialised (`.value()`), and the columns a filtering helper compares on every row it scans.
`reads()` aggregates the log per stream (and per namespace for annotations) into the drops manifest's `reads`,
with `access: observed`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from core.blobs import resolve
from engine.cards.format.lines import Located
from engine.cards.format.model import ROW_MODELS, STREAMS, FilterRecord, ReadRecord, RowsRead
from core.errors import ArtifactError
from engine.cards.bundle import Bundle

_MISSING = object()


@dataclass
class _Group:
    fields: set[str] = field(default_factory=set)
    rows: set[str] = field(default_factory=set)
    sequences: list[int] = field(default_factory=list)


class AccessLog:
    def __init__(self) -> None:
        self.groups: dict[tuple[str, str | None], _Group] = {}

    def note(self, row: "Row", path: str) -> None:
        group = self.groups.setdefault((row.stream, row.namespace), _Group())
        group.fields.add(path)
        if row.where not in group.rows:
            group.rows.add(row.where)
            seq = row.raw.get("sequence")
            if isinstance(seq, int):
                group.sequences.append(seq)

    def reads(self) -> list[ReadRecord]:
        out = []
        for (stream, namespace), g in sorted(self.groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
            fields = sorted(f for f in g.fields if not any(o.startswith(f + ".") for o in g.fields))
            out.append(ReadRecord(stream=stream, namespace=namespace, fields=fields, access="observed",
                                  rows=RowsRead(count=len(g.rows), sequence_min=min(g.sequences, default=None),
                                                sequence_max=max(g.sequences, default=None))))
        return out


class Tracked:
    """A dict or list inside a row; reading through it logs the path."""

    def __init__(self, row: "Row", path: str, value: Any):
        self._row, self._path, self._value = row, path, value

    def _child(self, key: str, value: Any) -> Any:
        path = f"{self._path}.{key}"
        if isinstance(value, (dict, list)):
            return Tracked(self._row, path, value)
        self._row.log.note(self._row, path)
        return value

    def __getitem__(self, key: str | int) -> Any:
        if isinstance(self._value, list):
            return self._child("[]", self._value[key])  # type: ignore[index]
        return self._child(str(key), self._value[key])

    def get(self, key: str, default: Any = None) -> Any:
        if not isinstance(self._value, dict) or key not in self._value:
            self._row.log.note(self._row, f"{self._path}.{key}")
            return default
        return self._child(key, self._value[key])

    def __contains__(self, key: str) -> bool:
        self._row.log.note(self._row, f"{self._path}.{key}")
        return isinstance(self._value, dict) and key in self._value

    def __iter__(self) -> Iterator[Any]:
        if isinstance(self._value, list):
            return (self._child("[]", v) for v in self._value)
        self._row.log.note(self._row, self._path)
        return iter(self._value)

    def __len__(self) -> int:
        self._row.log.note(self._row, self._path)
        return len(self._value)

    def value(self) -> Any:
        """The whole container (logged as a read of the whole path)."""
        self._row.log.note(self._row, self._path)
        return self._value


class Row:
    """One row of a stream; columns are read with `row["column"]` or `row.path("a.b.c")`."""

    def __init__(self, stream: str, loc: Located, log: AccessLog):
        self.stream, self.where, self.raw, self.log = stream, loc.where, loc.row, log
        self.namespace = loc.row.get("namespace") if stream == "annotations" else None

    def __getitem__(self, column: str) -> Any:
        value = self.raw[column]
        if isinstance(value, (dict, list)):
            return Tracked(self, column, value)
        self.log.note(self, column)
        return value

    def get(self, column: str, default: Any = None) -> Any:
        if column not in self.raw:
            self.log.note(self, column)
            return default
        return self[column]

    def path(self, dotted: str, default: Any = None) -> Any:
        """Read a nested value by dotted path (logs the path; containers come back as plain values)."""
        value: Any = self.raw
        for key in dotted.split("."):
            value = value.get(key, _MISSING) if isinstance(value, dict) else _MISSING
            if value is _MISSING:
                self.log.note(self, dotted)
                return default
        self.log.note(self, dotted)
        return value


class CardReader:
    """`preloaded`: streams already decoded, schema-checked and blob-resolved (the validator's rows), shared by the
    readers of several rules; other streams are loaded from the bundle on first use."""

    def __init__(self, bundle: Bundle, preloaded: dict[str, list[Located]] | None = None):
        self.bundle = bundle
        self.log = AccessLog()
        self._rows: dict[str, list[Located]] = dict(preloaded or {})

    def _load(self, stream: str) -> list[Located]:
        if stream not in STREAMS:
            raise ArtifactError(f"unknown stream {stream!r}")
        if stream not in self._rows:
            located, bad = self.bundle.rows(stream)
            if bad:
                raise ArtifactError(f"{bad[0][0]}: {bad[0][1]}")
            model = ROW_MODELS[stream]
            rows = []
            for loc in located:
                try:
                    model.model_validate(loc.row)
                except ValidationError as exc:
                    raise ArtifactError(f"{loc.where}: not a valid {stream} row: {exc.errors()[0]['msg']}") from None
                rows.append(Located(loc.where, resolve(loc.row, self.bundle.blob)))
            self._rows[stream] = rows
        return self._rows[stream]

    def rows(self, stream: str) -> Iterator[Row]:
        for loc in self._load(stream):
            yield Row(stream, loc, self.log)

    def annotations(self, namespace: str) -> Iterator[Row]:
        """Annotation rows of one namespace (the namespace column of every row is read to filter)."""
        for row in self.rows("annotations"):
            if row["namespace"] == namespace:
                yield row

    def latest_annotations(self, namespace: str, target_type: str = "node") -> dict[str, Row]:
        """The current row (highest sequence) per target of one namespace."""
        latest: dict[str, Row] = {}
        for row in self.annotations(namespace):
            if row["target_type"] != target_type:
                continue
            target = row["target_id"]
            if target not in latest or row["sequence"] > latest[target]["sequence"]:
                latest[target] = row
        return latest

    def mutations(self, mutation_type: str) -> Iterator[Row]:
        for row in self.rows("mutations"):
            if row["mutation_type"] == mutation_type:
                yield row

    def reads(self) -> list[ReadRecord]:
        return self.log.reads()


@dataclass
class Footprint:
    """What a rule declares beyond the observed reads: filters with rows removed (collapses and semantic losses
    are declared on the rule itself)."""

    filters: list[FilterRecord] = field(default_factory=list)

    def filter(self, expr: str, rows_removed: int, reason: str) -> None:
        self.filters.append(FilterRecord(expr=expr, rows_removed=rows_removed, reason=reason))
