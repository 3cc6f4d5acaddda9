"""Cell summaries: complete cells agree with independent computations; incomplete inputs are reported, not averaged."""

from __future__ import annotations

import json
import random
import statistics

import pytest
from scipy.stats import binomtest
from statsmodels.stats.multitest import multipletests

from core.statistics import paired_bootstrap_ci_reference
from engine.aggregate.discovery import find_results, load_results, parse_result, MalformedResult
from engine.aggregate.summary import aggregate
from engine.aggregate.synthetic import synthetic_result, write_job
from tests.engine.aggregate.conftest import GRID, make_result

REPLICATES = 200


def run(root, **kwargs):
    results, skipped = load_results(find_results([root]), roots=[root],
                                    include_nonconformant=kwargs.pop("include_nonconformant", False))
    return aggregate(results, skipped=skipped, bootstrap_replicates=REPLICATES, **kwargs), skipped


@pytest.mark.slow
def test_complete_cell_matches_independent_computations(tmp_path, write_cell):
    paths = write_cell()
    summary, skipped = run(tmp_path)
    assert skipped == []
    [cell] = summary["cells"]
    assert cell["status"] == "complete" and cell["problems"] == []
    assert cell["seeds_present"] == [0, 1, 2]
    raw = [json.loads(p.read_text()) for p in paths]
    deltas = []
    for row, data in zip(cell["per_seed"], raw):
        base = statistics.mean(data["test"]["baseline_scores"])
        dep = statistics.mean(data["test"]["deployed_scores"])
        assert (row["seed"], row["n"]) == (data["optimizer_seed"], 20)
        assert row["baseline"] == pytest.approx(base) and row["deployed"] == pytest.approx(dep)
        assert row["delta_pp"] == pytest.approx(100 * (dep - base))
        deltas.append(100 * (dep - base))
    assert cell["mean_delta_pp"] == pytest.approx(statistics.mean(deltas))
    assert cell["std_delta_pp"] == pytest.approx(statistics.stdev(deltas))
    assert cell["macro_baseline"] == pytest.approx(statistics.mean(r["baseline"] for r in cell["per_seed"]))
    pairs = [list(zip(d["test"]["baseline_scores"], d["test"]["deployed_scores"])) for d in raw]
    assert cell["confidence_interval_delta_pp"] == list(paired_bootstrap_ci_reference(pairs, REPLICATES, 0))
    for data in raw:
        b, d = data["test"]["baseline_scores"], data["test"]["deployed_scores"]
        wins = sum(y > x for x, y in zip(b, d))
        losses = sum(y < x for x, y in zip(b, d))
        expected = 1.0 if wins + losses == 0 else binomtest(wins, wins + losses, 0.5).pvalue
        assert cell["per_seed_exact_mcnemar_p"][str(data["optimizer_seed"])] == pytest.approx(expected)
    # one cell in its family: Holm over its own three seeds
    seeds = sorted(cell["per_seed_exact_mcnemar_p"])
    _, holm, _, _ = multipletests([cell["per_seed_exact_mcnemar_p"][s] for s in seeds], method="holm")
    assert [cell["per_seed_mcnemar_p_holm"][s] for s in seeds] == pytest.approx(list(holm))
    assert cell["holm_family"] == "hotpotqa|qwen"
    assert cell["fallbacks"] == sum(d["selection"]["fallback_reason"] is not None for d in raw)
    job = cell["per_seed_job"]["0"]
    assert job["charged_rollouts"] == 600 and job["stop_reason"] == "rollout_budget_spent"
    assert job["failure_counts"]["baseline"]["n"] == 20
    assert cell["failure_totals"]["infrastructure_failures"] == sum(
        d["test"]["failure_counts"][arm]["infrastructure_failures"] for d in raw for arm in ("baseline", "deployed"))


def _assert_not_averaged(cell):
    assert cell["status"] == "incomplete"
    for key in ("mean_delta_pp", "std_delta_pp", "macro_baseline", "macro_deployed",
                "confidence_interval_delta_pp", "per_seed_exact_mcnemar_p", "per_seed_mcnemar_p_holm"):
        assert cell[key] is None, key


def test_missing_seed_is_reported_not_averaged(tmp_path, write_cell):
    write_cell(seeds=(0, 1))
    summary, _ = run(tmp_path)
    [cell] = summary["cells"]
    _assert_not_averaged(cell)
    assert cell["problems"] == ["missing seed 2"]
    assert cell["seeds_present"] == [0, 1]


def test_duplicate_seed_is_reported_not_averaged(tmp_path, write_cell):
    write_cell()
    write_job(tmp_path, make_result(1, rng_seed=99), directory=tmp_path / "rerun" / "seed1")
    summary, _ = run(tmp_path)
    [cell] = summary["cells"]
    _assert_not_averaged(cell)
    [problem] = cell["problems"]
    assert problem.startswith("duplicate seed 1:") and "rerun/seed1/result.json" in problem
    assert [row["seed"] for row in cell["per_seed"]] == [0, 2]  # the duplicated seed is not summarized


def test_mismatched_example_ids_are_reported(tmp_path, write_cell):
    write_cell(seeds=(0, 1))
    other = [f"other-{i}" for i in range(20)]
    write_job(tmp_path / "runs", make_result(2, example_ids=other))
    summary, _ = run(tmp_path)
    [cell] = summary["cells"]
    _assert_not_averaged(cell)
    assert cell["problems"] == ["mismatched example IDs: seed 2 vs seed 0 (20 only in seed 2, 20 only in seed 0)"]


def test_invalid_test_phase_is_reported(tmp_path, write_cell):
    write_cell(seeds=(0, 2))
    broken = make_result(1, valid=False)
    broken["test"]["baseline_scores"] = None  # an invalid phase may carry no usable scores
    write_job(tmp_path / "runs", broken)
    summary, _ = run(tmp_path)
    [cell] = summary["cells"]
    _assert_not_averaged(cell)
    assert cell["problems"] == ["invalid test phase (valid_for_aggregation false) for seed 1"]
    assert cell["per_seed_job"]["1"]["valid_for_aggregation"] is False


def test_several_problems_are_all_listed(tmp_path, write_cell):
    write_cell(seeds=(0,))
    write_job(tmp_path / "runs", make_result(1, valid=False))
    write_job(tmp_path, make_result(0, rng_seed=5), directory=tmp_path / "dup")
    summary, _ = run(tmp_path)
    problems = summary["cells"][0]["problems"]
    assert len(problems) == 3
    assert problems[0].startswith("duplicate seed 0")
    assert problems[1:] == ["missing seed 2", "invalid test phase (valid_for_aggregation false) for seed 1"]


def test_nonconformant_jobs_are_skipped_unless_included(tmp_path, write_cell):
    write_cell(conformant=False)
    summary, skipped = run(tmp_path)
    assert summary["cells"] == []
    assert len(skipped) == 3 and all("non-conformant" in s.reason for s in skipped)
    summary, skipped = run(tmp_path, include_nonconformant=True)
    assert skipped == [] and summary["cells"][0]["status"] == "complete"


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda d: d.pop("grid_cell") and d.pop("cell"), "cell"),
        (lambda d: d.update(schema="something-else/v1"), "schema"),
        (lambda d: d.update(protocol_id="other"), "protocol_id"),
        (lambda d: d.pop("optimizer_seed"), "optimizer_seed"),
        (lambda d: d["test"].pop("valid_for_aggregation"), "valid_for_aggregation"),
        (lambda d: d["test"]["deployed_scores"].pop(), "deployed_scores has 19 scores"),
        (lambda d: d["test"]["baseline_scores"].__setitem__(0, 2), "outside [0, 1]"),
        (lambda d: d["test"]["example_ids"].__setitem__(1, d["test"]["example_ids"][0]), "repeats"),
        (lambda d: d.update(selection="x"), "selection"),
        (lambda d: d["grid_cell"].update(team_size="4"), "team_size"),
        (lambda d: d["test"]["failure_counts"].update(baseline=3), "failure_counts"),
    ],
)
def test_malformed_results_are_skipped_with_a_reason(mutate, reason):
    data = make_result(0)
    mutate(data)
    with pytest.raises(MalformedResult, match=reason.replace("[", r"\[").replace("]", r"\]")):
        parse_result(data, "x/result.json")


def test_unreadable_json_is_skipped_not_fatal(tmp_path, write_cell):
    write_cell()
    bad = tmp_path / "runs" / "broken" / "result.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("{not json")
    (tmp_path / "runs" / "list").mkdir()
    (tmp_path / "runs" / "list" / "result.json").write_text("[1, 2]")
    summary, skipped = run(tmp_path)
    assert {s.reason.split(" ")[0] for s in skipped} == {"unreadable", "not"}
    assert summary["cells"][0]["status"] == "complete"
    assert len(summary["skipped_files"]) == 2


def test_older_files_without_failure_counts_or_grid_cell(tmp_path):
    for seed in (0, 1, 2):
        data = make_result(seed, failure_counts=False)
        data.pop("grid_cell")
        write_job(tmp_path, data, directory=tmp_path / f"job{seed}")
    summary, skipped = run(tmp_path)
    assert skipped == []
    [cell] = summary["cells"]
    assert cell["status"] == "complete"
    assert cell["cell"] == GRID
    assert cell["failure_totals"] is None
    assert cell["per_seed_job"]["0"]["failure_counts"] is None


def _two_cell_tree(tmp_path):
    other = dict(GRID, topology="centralized")
    third = dict(GRID, task="lcb", method="mipro")
    for grid, offset in ((GRID, 0), (other, 10), (third, 20)):
        for seed in (0, 1, 2):
            data = synthetic_result(grid, seed, n_items=40, rng=random.Random(offset + seed), gain=0.4,
                                    baseline_rate=0.3)
            write_job(tmp_path, data)
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize("family", ["task", "method", "none"])
def test_holm_families(tmp_path, family):
    summary, _ = run(_two_cell_tree(tmp_path), family=family)
    cells = summary["cells"]
    assert len(cells) == 3 and all(c["status"] == "complete" for c in cells)
    key = {"task": lambda c: f"{c['cell']['task']}|{c['cell']['task_model']}",
           "method": lambda c: c["cell"]["method"], "none": lambda c: "none"}[family]
    families: dict[str, list[tuple[dict, str]]] = {}
    for cell in cells:
        for seed in cell["per_seed_exact_mcnemar_p"]:
            families.setdefault(key(cell), []).append((cell, seed))
    for name, members in families.items():
        raw = [cell["per_seed_exact_mcnemar_p"][seed] for cell, seed in members]
        got = [cell["per_seed_mcnemar_p_holm"][seed] for cell, seed in members]
        assert all(cell["holm_family"] == name for cell, _ in members)
        if family == "none":
            assert got == raw
        else:
            assert got == pytest.approx(list(multipletests(raw, method="holm")[1]))
    if family == "task":
        assert sorted(len(m) for m in families.values()) == [3, 6]
