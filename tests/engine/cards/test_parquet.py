"""`card export --format parquet` and `card import`: one Parquet file per stream beside the card's own files,
read in one line by pandas and duckdb, and rebuilt into byte-identical JSONL streams that validate."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from core.blobs import BLOB_KEY
from core.canonical import canonical_json, sha256_hex
from core.errors import ArtifactError
from engine.cards.bundle import Bundle
from engine.cards.cli import main
from engine.cards.export import Redaction, export_card
from engine.cards.parquet import import_parquet
from engine.cards.validate import validate_path
from engine.cli.main import main as top_level
from tests.engine.cards.cardutil import build_store, lines, rich_spec

pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed (extra parquet)")
pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is not installed (extra parquet)")
pd = pytest.importorskip("pandas", reason="pandas is not installed (extra cards-test)")
duckdb = pytest.importorskip("duckdb", reason="duckdb is not installed (extra cards-test)")
STREAMS = ("events", "nodes", "edges", "annotations", "mutations")


def roundtrip(card: Path, tmp_path: Path) -> Path:
    out = tmp_path / "parquet"
    assert main(["export", str(card), "--format", "parquet", "--out", str(out)]) == 0
    assert main(["import", str(out), "--out", str(tmp_path / "back")]) == 0
    original, back = Bundle.load(card), Bundle.load(tmp_path / "back")
    assert back.files == original.files  # every stream, blob, registry and drops file byte for byte
    assert validate_path(tmp_path / "back") == []
    return out


def test_job_card_roundtrip_read_by_pandas_and_duckdb(faulty_job, tmp_path):
    run_dir, _ = faulty_job
    export_card(run_dir, tmp_path / "card")
    out = roundtrip(tmp_path / "card", tmp_path)
    card = Bundle.load(tmp_path / "card")
    for stream in STREAMS:
        frame = pd.read_parquet(out / f"{stream}.parquet")
        assert len(frame) == len(lines(card, stream))
    events = pd.read_parquet(out / "events.parquet")
    assert [json.loads(p) for p in events["payload"]] == [e["payload"] for e in lines(card, "events")]
    assert list(events["sequence"]) == [e["sequence"] for e in lines(card, "events")]
    errored = duckdb.sql(f"SELECT count(*) FROM '{out / 'events.parquet'}' "
                         "WHERE json_extract(payload, '$.error') IS NOT NULL "
                         "AND json_extract(payload, '$.error') != 'null'").fetchall()[0]
    assert errored == (sum(1 for e in lines(card, "events") if e["payload"]["error"] is not None),)
    statuses = dict(duckdb.sql(f"SELECT status, count(*) FROM '{out / 'nodes.parquet'}' GROUP BY status").fetchall())
    assert statuses["failed"] >= 1 and sum(statuses.values()) == len(lines(card, "nodes"))
    assert pd.read_parquet(out / "bundles.parquet")["bundle_sha256"].tolist() == [
        json.loads(line)["bundle_sha256"] for line in card.files["bundles.jsonl"].splitlines()]
    # the Hugging Face layout: a dataset card naming one config per table, data files beside it
    readme = (out / "README.md").read_text()
    assert all(f"- config_name: {s}\n  data_files: {s}.parquet" in readme for s in STREAMS)
    assert json.loads((out / "manifest.json").read_text()) == json.loads(card.files["manifest.json"])


def test_blobs_stay_referenced_and_redactions_survive(tmp_path):
    build_store(tmp_path / "card.sqlite", rich_spec())
    export_card(tmp_path, tmp_path / "card", redactions=[Redaction.parse("annotations.payload.value")])
    out = roundtrip(tmp_path / "card", tmp_path)
    payloads = [json.loads(p) for p in pd.read_parquet(out / "events.parquet")["payload"]]
    refs = [p["big"]["text"] for p in payloads if "big" in p]  # rich_spec: {"big": {"text": 70,000 chars}}
    assert refs and all(BLOB_KEY in r for r in refs)
    assert all((out / "blobs" / r[BLOB_KEY][7:9] / r[BLOB_KEY][7:]).is_file() for r in refs)


def test_a_changed_table_is_refused(faulty_job, tmp_path):
    export_card(faulty_job[0], tmp_path / "card")
    out = tmp_path / "parquet"
    assert main(["export", str(tmp_path / "card"), "--format", "parquet", "--out", str(out)]) == 0
    table = pq.read_table(out / "annotations.parquet")
    payload = table.column("payload").to_pylist()
    payload[0] = canonical_json({**json.loads(payload[0]), "forged": True})
    changed = table.set_column(table.schema.get_field_index("payload"), "payload", pa.array(payload))
    sink = io.BytesIO()
    pq.write_table(changed, sink)
    (out / "annotations.parquet").write_bytes(sink.getvalue())
    with pytest.raises(ArtifactError, match="sha256"):  # the file no longer matches parquet.json
        import_parquet(out)
    index = json.loads((out / "parquet.json").read_text())
    index["tables"]["annotations"]["sha256"] = sha256_hex(sink.getvalue())
    (out / "parquet.json").write_text(json.dumps(index))
    with pytest.raises(ArtifactError, match="byte for byte"):  # ... nor the stream hash in the card's manifest
        import_parquet(out)
    assert top_level(["card", "import", str(out), "--out", str(tmp_path / "x")]) != 0
    assert main(["import", str(tmp_path / "missing"), "--out", str(tmp_path / "x")]) == 2
    assert not (tmp_path / "x").exists()
