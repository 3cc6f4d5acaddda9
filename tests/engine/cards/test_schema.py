"""`card schema --out DIR`: JSON Schemas generated from the validator's pydantic models; every row, manifest,
registry, drops manifest and bundle record of a real card validates against them, and a wrong row does not."""

from __future__ import annotations

import json

import pytest

from engine.cards.cli import main
from engine.cards.export import export_card
from tests.engine.cards.cardutil import lines

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is not installed (extra cards-test)")
STREAMS = ("events", "nodes", "edges", "annotations", "mutations")


def test_schemas_describe_a_real_card(faulty_job, tmp_path, capsys):
    assert main(["schema", "--out", str(tmp_path / "schemas")]) == 0
    assert "JSON Schemas" in capsys.readouterr().out
    schemas = {p.name: json.loads(p.read_text()) for p in (tmp_path / "schemas").iterdir()}
    expected = {f"{s}.schema.json" for s in STREAMS} | {"manifest.schema.json", "reporting_rules.schema.json",
                                                         "drops.schema.json", "bundles.schema.json"}
    assert expected <= set(schemas)
    for schema in schemas.values():
        jsonschema.Draft202012Validator.check_schema(schema)
    card = export_card(faulty_job[0])
    validator = {name: jsonschema.Draft202012Validator(schema) for name, schema in schemas.items()}
    for stream in STREAMS:
        for row in lines(card, stream):
            validator[f"{stream}.schema.json"].validate(row)
    manifest = json.loads(card.files["manifest.json"])
    validator["manifest.schema.json"].validate(manifest)
    validator["reporting_rules.schema.json"].validate(json.loads(card.files["reporting_rules.json"]))
    validator["drops.schema.json"].validate(json.loads(card.files["drops/mpb.protocol@1.json"]))
    for line in card.files["bundles.jsonl"].splitlines():
        validator["bundles.schema.json"].validate(json.loads(line))
    # every namespace the card uses declares its payload schema, and its payloads satisfy it
    for ns, decl in manifest["namespaces"].items():
        assert decl["schema"]["properties"] == schemas[f"annotations.{ns}.payload.schema.json"]["properties"]
        for row in lines(card, "annotations"):
            if row["namespace"] == ns:
                jsonschema.Draft202012Validator(decl["schema"]).validate(row["payload"])
    bad = lines(card, "nodes")[0] | {"level": "0"}
    assert not validator["nodes.schema.json"].is_valid(bad)


def test_schema_out_must_be_a_directory(tmp_path):
    (tmp_path / "file").write_text("x")
    assert main(["schema", "--out", str(tmp_path / "file")]) == 2
