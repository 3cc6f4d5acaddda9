"""`card export --format parquet` and `card import`: a columnar copy of a card for sharing (optional extra
`parquet` = pyarrow), and the validated way back to the JSONL card.

Layout of the output directory (a standard Parquet dataset: one file per table, plain column types):

    events.parquet nodes.parquet edges.parquet annotations.parquet mutations.parquet [bundles.parquet]
    manifest.json reporting_rules.json drops/ blobs/     the card's own files, byte for byte
    parquet.json                                          per table: rows, columns, sha256 of the Parquet file and
                                                          of the JSONL stream it reproduces
    README.md                                             dataset card: one config per table (Hugging Face layout)

Columns are the stream's columns in paper order: integers (`sequence`, `level`) as int64, JSON objects
(`payload`, `old_value`, `new_value`, bundle roles/demos/metadata) as canonical JSON text with blob references
kept as they are (the blobs are beside them), everything else as strings. `_extra` holds any other keys of a row
(JSON text) and `_absent` the listed columns a row lacked, so the round trip is exact: `import_parquet` rebuilds
every JSONL stream and refuses unless each one hashes to the manifest's sha256.

One line reads a table: `pandas.read_parquet("DIR/events.parquet")`, `duckdb.sql("SELECT * FROM
'DIR/events.parquet'")`, `datasets.load_dataset("parquet", data_files={"events": "DIR/events.parquet"})`.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from core.canonical import canonical_json, sha256_hex
from engine.cards.format.lines import encode_lines, loads
from engine.cards.format.model import BUNDLES_FILE, COLUMNS, JSON_COLUMNS, STREAMS
from core.errors import ArtifactError, UsageError
from engine.cards.bundle import Bundle, stream_path
from engine.cards.manifest import MANIFEST, json_bytes

INDEX = "parquet.json"
INT_COLUMNS = ("sequence", "level")
TABLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    **{s: (COLUMNS[s], JSON_COLUMNS[s]) for s in STREAMS},
    "bundles": (("bundle_sha256", "roles", "demos", "metadata", "used_as"), ("roles", "demos", "metadata",
                                                                            "used_as"))}


def _pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise UsageError("Parquet needs pyarrow: pip install 'mas-promptbench-engine[parquet]'") from None
    return pyarrow


def _source(table: str) -> str:
    return BUNDLES_FILE if table == "bundles" else stream_path(table)


def _table_bytes(pa: Any, table: str, rows: list[dict[str, Any]]) -> bytes:
    columns, json_columns = TABLES[table]
    data: dict[str, list[Any]] = {c: [] for c in (*columns, "_extra", "_absent")}
    for row in rows:
        for c in columns:
            value = row.get(c)
            data[c].append(canonical_json(value) if c in json_columns and value is not None else value)
        extra = {k: v for k, v in row.items() if k not in columns}
        absent = [c for c in columns if c not in row]
        data["_extra"].append(canonical_json(extra) if extra else None)
        data["_absent"].append(canonical_json(absent) if absent else None)
    fields = [pa.field(c, pa.int64() if c in INT_COLUMNS else pa.string()) for c in data]
    arrow = pa.table(data, schema=pa.schema(fields))
    sink = io.BytesIO()
    pa.parquet.write_table(arrow, sink, compression="zstd")
    return sink.getvalue()


def _readme(tables: list[str]) -> bytes:
    configs = "".join(f"- config_name: {t}\n  data_files: {t}.parquet\n" for t in tables)
    return (f"---\nconfigs:\n{configs}---\n# Rollout card (Parquet)\n\nOne table per card stream; `manifest.json` "
            "holds the run metadata, content hashes, release scope and the reported numbers; JSON columns are "
            "canonical JSON text; `blobs/` holds values over the 64 KB inline cap, referenced from those columns."
            "\n").encode("utf-8")


def export_parquet(card: Bundle, out: Path) -> Bundle:
    pa = _pyarrow()
    files = {name: data for name, data in card.files.items() if name == MANIFEST or not name.endswith(".jsonl")}
    index: dict[str, Any] = {}
    tables = [*STREAMS, *(["bundles"] if BUNDLES_FILE in card.files else [])]
    for table in tables:
        raw = card.files.get(_source(table), b"")
        rows = [loads(line) for line in raw.decode("utf-8").split("\n") if line]
        data = _table_bytes(pa, table, rows)
        files[f"{table}.parquet"] = data
        index[table] = {"path": f"{table}.parquet", "rows": len(rows), "sha256": sha256_hex(data),
                        "columns": [*TABLES[table][0], "_extra", "_absent"], "source": _source(table),
                        "source_sha256": sha256_hex(raw)}
    files[INDEX] = json_bytes({"format": "rollout-card-parquet", "format_version": "1.0.0", "tables": index})
    files["README.md"] = _readme(tables)
    result = Bundle(files)
    result.write_dir(out)
    return result


def _rows(pa: Any, data: bytes, table: str) -> list[dict[str, Any]]:
    columns, json_columns = TABLES[table]
    arrow = pa.parquet.read_table(io.BytesIO(data))
    out = []
    for record in arrow.to_pylist():
        row: dict[str, Any] = {}
        absent = set(json.loads(record["_absent"])) if record.get("_absent") else set()
        for c in columns:
            if c in absent:
                continue
            value = record.get(c)
            row[c] = loads(value) if c in json_columns and value is not None else value
        if record.get("_extra"):
            row.update(loads(record["_extra"]))
        out.append(row)
    return out


def import_parquet(src: Path) -> Bundle:
    """The JSONL card a Parquet export came from; every stream must hash to the manifest's sha256."""
    pa = _pyarrow()
    exported = Bundle.load(src)
    try:
        index = json.loads(exported.files[INDEX])["tables"]
        manifest = json.loads(exported.files[MANIFEST])
    except (KeyError, ValueError) as exc:
        raise UsageError(f"{src} is not a Parquet card export ({INDEX} or {MANIFEST} missing or unreadable)") from exc
    files = {n: d for n, d in exported.files.items() if not n.endswith(".parquet") and n not in (INDEX, "README.md")}
    for table, entry in index.items():
        if table not in TABLES:
            raise ArtifactError(f"{src}/{INDEX} names unknown table {table!r}")
        data = exported.files.get(entry["path"])
        if data is None or sha256_hex(data) != entry["sha256"]:
            raise ArtifactError(f"{src}/{entry['path']} is missing or does not match its sha256 in {INDEX}")
        lines = encode_lines(_rows(pa, data, table))
        expected = (manifest["streams"][table]["sha256"] if table in STREAMS
                    else (manifest.get("files", {}).get(BUNDLES_FILE) or {}).get("sha256"))
        if sha256_hex(lines) != expected:
            raise ArtifactError(f"{entry['path']} does not reproduce {_source(table)} byte for byte")
        files[_source(table)] = lines
    return Bundle(files)
