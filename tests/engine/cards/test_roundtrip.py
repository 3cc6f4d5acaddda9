"""A real job's card: export, validate, re-score (protocol numbers reproduced exactly), determinism, CLI."""

from __future__ import annotations

import json

from engine.cards.format.problems import errors
from engine.cards.bundle import Bundle
from engine.cards.cli import main
from engine.cards.export import export_card
from engine.cards.rescore import apply_rule, run_rule
from engine.cards.validate import validate_bundle, validate_path
from tests.engine.cards.cardutil import bundle_rows, card_form, store_rows


def test_job_card_exports_validates_and_reproduces_result(clean_job, tmp_path):
    run_dir, result = clean_job
    bundle = export_card(run_dir, tmp_path / "card")
    assert sorted(n for n in bundle.files if "/" not in n) == [
        "annotations.jsonl", "bundles.jsonl", "edges.jsonl", "events.jsonl", "manifest.json", "mutations.jsonl",
        "nodes.jsonl", "reporting_rules.json"]
    assert validate_path(tmp_path / "card") == []
    manifest = json.loads(bundle.files["manifest.json"])
    assert manifest["format"] == "rollout-card" and manifest["format_version"] == "1.2.0"
    assert manifest["producer"]["name"] == "mas-promptbench-engine"
    assert manifest["run"]["cell"] == result["cell"] and manifest["run"]["method"] == "identity"
    assert manifest["run"]["protocol_conformant"] is False and manifest["run"]["status"] == "completed"
    assert set(manifest["namespaces"]) == {"mpb.job", "mpb.rollout", "mpb.score"}
    assert manifest["release_scope"]["class"] == "full_trace"
    # re-import equals the store (same rows, same order; annotation values stored once)
    assert bundle_rows(Bundle.load(tmp_path / "card")) == card_form(store_rows(run_dir / "card.sqlite"))
    # the bundles the run used are card records: seed (baseline arm) and deployed, digests recomputable
    bundles = [json.loads(line) for line in bundle.files["bundles.jsonl"].splitlines()]
    deployed = json.loads((run_dir / "selection.json").read_text())["deployed_bundle"]
    [record] = [b for b in bundles if "deployed" in b["used_as"]]
    assert (record["bundle_sha256"], record["roles"]) == (deployed["bundle_sha256"], deployed["roles"])
    assert "seed" in next(b["used_as"] for b in bundles if b["bundle_sha256"] == record["bundle_sha256"]) or any(
        "seed" in b["used_as"] for b in bundles)
    # failure counts beside every headline score
    for number in manifest["reported"]:
        arms = {"baseline_mean": ["baseline"], "deployed_mean": ["deployed"]}.get(number["name"],
                                                                                 ["baseline", "deployed"])
        assert sorted(number["arms"]) == arms
        for arm in arms:
            assert number["arms"][arm]["counts"] == result["test"]["failure_counts"][arm]
            assert number["arms"][arm]["denominator"] == 30
    assert manifest["run"]["test"]["failure_counts"] == result["test"]["failure_counts"]

    outcome = run_rule(Bundle.load(tmp_path / "card"), "mpb.protocol")
    test = result["test"]
    assert outcome.result.status == "ok"
    assert outcome.result.values["baseline_mean"] == test["baseline_mean"]
    assert outcome.result.values["deployed_mean"] == test["deployed_mean"]
    assert outcome.result.values["delta_pp"] == test["delta_pp"]
    assert outcome.result.values["valid_for_aggregation"] is test["valid_for_aggregation"] is True
    for arm in ("baseline", "deployed"):
        assert outcome.result.arms[arm]["counts"] == test["failure_counts"][arm]
        assert outcome.result.arms[arm]["denominator"] == 30
    reads = {(r.stream, r.namespace): r for r in outcome.drops.reads}
    assert "payload.value" in reads[("annotations", "mpb.score")].fields
    assert all(r.access == "observed" for r in outcome.drops.reads)
    assert ("events", None) not in reads  # the protocol metric never reads the trace itself


def test_infra_failure_card_rules_differ(faulty_job, tmp_path):
    run_dir, result = faulty_job
    test = result["test"]
    assert test["failure_counts"]["deployed"]["infrastructure_failures"] == 1
    assert test["delta_pp"] is None and test["valid_for_aggregation"] is False
    export_card(run_dir, tmp_path / "card")
    card = Bundle.load(tmp_path / "card")
    assert errors(validate_bundle(card)) == []
    protocol = apply_rule(card, "mpb.protocol").result
    as_wrong = apply_rule(card, "mpb.test.infra_as_wrong").result
    excluded = apply_rule(card, "mpb.test.infra_excluded").result
    card.save()
    assert validate_path(tmp_path / "card") == []
    assert protocol.values["baseline_mean"] == test["baseline_mean"] == sum(test["baseline_scores"]) / 30
    assert protocol.values["deployed_mean"] == test["deployed_mean"]
    assert protocol.values["delta_pp"] is None
    assert as_wrong.values["deployed_mean"] == test["deployed_mean"] and as_wrong.values["delta_pp"] == 0.0
    # excluding the infrastructure failure changes the denominator (29) and the mean
    statuses = json.loads((run_dir / "test.json").read_text())["deployed_status"]
    kept = [s for s, st in zip(test["deployed_scores"], statuses) if st != "infrastructure_failure"]
    assert excluded.arms["deployed"]["denominator"] == len(kept) == 29
    assert excluded.values["deployed_mean"] == sum(kept) / 29 != protocol.values["deployed_mean"]
    assert excluded.arms["deployed"]["counts"]["infrastructure_failures"] == 1
    registry = json.loads(card.files["reporting_rules.json"])
    assert [e["rule_id"] for e in registry] == ["mpb.protocol@1", "mpb.test.infra_as_wrong@1",
                                                "mpb.test.infra_excluded@1"]
    drops = json.loads(card.files["drops/mpb.test.infra_excluded@1.json"])
    assert {"expr": "pairs where either arm is an infrastructure failure", "rows_removed": 1,
            "reason": "infrastructure failures excluded from the denominator"} in drops["filters"]


def test_export_is_deterministic(clean_job, tmp_path):
    run_dir, _ = clean_job
    export_card(run_dir, tmp_path / "a")
    export_card(run_dir, tmp_path / "b")
    a, b = Bundle.load(tmp_path / "a"), Bundle.load(tmp_path / "b")
    assert a.files == b.files
    export_card(run_dir, tmp_path / "a.zip", as_zip=True)
    export_card(run_dir, tmp_path / "b", as_zip=True)
    assert (tmp_path / "a.zip").read_bytes() == (tmp_path / "b.zip").read_bytes()
    assert Bundle.load(tmp_path / "a.zip").files == a.files
    assert validate_path(tmp_path / "a.zip") == []
    export_card(run_dir, tmp_path / "a")  # re-export over an existing card replaces it atomically
    assert Bundle.load(tmp_path / "a").files == a.files


def test_cli(clean_job, tmp_path, capsys):
    run_dir, result = clean_job
    assert main(["export", str(run_dir), "--out", str(tmp_path / "c"), "--zip"]) == 0
    assert (tmp_path / "c.zip").is_file()
    assert main(["validate", str(tmp_path / "c.zip")]) == 0
    assert "valid (0 error(s)" in capsys.readouterr().out
    assert main(["rescore", str(tmp_path / "c.zip"), "--rule", "mpb.protocol"]) == 0
    out = capsys.readouterr().out
    assert f"baseline_mean={json.dumps(result['test']['baseline_mean'])}" in out
    assert "denominator=30 n=30 usable=30" in out and "infrastructure_failures=0" in out
    assert main(["rescore", str(tmp_path / "c.zip"), "--rule", "mpb.test.infra_excluded"]) == 0
    assert main(["validate", str(tmp_path / "c.zip")]) == 0
    assert "drops/mpb.test.infra_excluded@1.json" in Bundle.load(tmp_path / "c.zip").files
    assert main(["rules"]) == 0
    assert "mpb.protocol@1" in capsys.readouterr().out
    # a rule that cannot compute on this card says why and exits 1
    assert main(["rescore", str(tmp_path / "c.zip"), "--rule", "hotpotqa.em_f1", "--dry-run"]) == 1
    assert "not_applicable" in capsys.readouterr().out
    # usage errors: one line, exit 2
    assert main(["rescore", str(tmp_path / "c.zip"), "--rule", "nope"]) == 2
    assert main(["export", str(run_dir)]) == 2
    assert main(["export", str(run_dir), "--out", str(tmp_path / "d"), "--redact", "bogus.x"]) == 2
    assert main(["validate", str(tmp_path / "missing")]) == 2
    assert main(["view", str(tmp_path / "missing"), "--out", str(tmp_path / "v")]) == 2
    assert main(["export", str(tmp_path / "c.zip"), "--format", "parquet", "--out", str(tmp_path / "p"),
                 "--redact", "events.payload"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 6 and all(line.startswith("python -m engine card") for line in err)
    assert not (tmp_path / "v").exists() and not (tmp_path / "p").exists()
