"""``engine.aggregate.cli.main``: exit codes, stderr warnings, the TSV table, summary.json, plots."""

from __future__ import annotations

import json
import sys

import pytest

from engine.aggregate.cli import main
from engine.aggregate.synthetic import write_job
from engine.aggregate.tables import HEADER
from tests.engine.aggregate.conftest import GRID, make_result


def test_help_works(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "ROOT" in out and "--bootstrap" in out and "--family" in out and "--plot" in out


@pytest.mark.parametrize("argv", [[], ["x", "--family", "dataset"], ["x", "--bootstrap", "50"],
                                  ["x", "--bootstrap", "many"], ["x", "--unknown"]])
def test_usage_errors_exit_2_with_one_line(argv, capsys, tmp_path):
    assert main([str(tmp_path) if a == "x" else a for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("aggregate: error:")


def test_missing_root_is_a_usage_error(tmp_path, capsys):
    assert main([str(tmp_path / "nope")]) == 2
    assert "no such file or directory" in capsys.readouterr().err


def test_empty_root_exits_1(tmp_path, capsys):
    assert main([str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "no result.json found" in captured.err


def test_only_skipped_files_exits_1(tmp_path, write_cell, capsys):
    write_cell(conformant=False)
    assert main([str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.count("warning: skipped") == 3 and "no usable job results (3 result.json file(s) skipped)" in err


def test_table_summary_json_and_warnings(tmp_path, write_cell, capsys):
    write_cell()
    write_cell(seeds=(0, 2), grid=dict(GRID, topology="centralized"))
    write_job(tmp_path / "runs", make_result(0, grid=dict(GRID, method="mipro"), conformant=False))
    (tmp_path / "runs" / "junk").mkdir()
    (tmp_path / "runs" / "junk" / "result.json").write_text("{")
    out_file = tmp_path / "out" / "summary.json"
    assert main([str(tmp_path / "runs"), "--bootstrap", "100", "--out", str(out_file)]) == 0
    captured = capsys.readouterr()
    warnings = captured.err.strip().splitlines()
    assert len(warnings) == 2 and all(line.startswith("aggregate: warning: skipped ") for line in warnings)
    assert any("junk/result.json: unreadable JSON" in line for line in warnings)
    assert any("non-conformant" in line for line in warnings)

    lines = captured.out.splitlines()
    assert lines[0].split("\t") == list(HEADER)
    rows = [line.split("\t") for line in lines if not line.startswith("\t")]
    assert all(len(row) == len(HEADER) for row in rows)
    incomplete, complete = rows[1], rows[2]  # centralized sorts before sequential
    assert incomplete[:6] == ["gepa", "hotpotqa", "centralized", "qwen", "0,2", "incomplete"]
    assert complete[:5] == ["gepa", "hotpotqa", "sequential", "qwen", "0,1,2"]
    assert complete[10].endswith("/3") and complete[9].startswith("[")
    assert "\t  incomplete: missing seed 1" in lines
    seed_lines = [line for line in lines if line.startswith("\t  seed ")]
    assert len(seed_lines) == 5
    assert all(" n=20 " in line and "delta=" in line and "pp" in line and "infra=" in line for line in seed_lines)

    summary = json.loads(out_file.read_text())
    assert summary["schema"] == "mas-promptbench-summary/v1"
    assert summary["protocol_id"] == "mas-promptbench-v1"
    assert summary["family"] == "task" and summary["bootstrap_replicates"] == 100
    assert [c["status"] for c in summary["cells"]] == ["incomplete", "complete"]
    assert len(summary["skipped_files"]) == 2
    cell = summary["cells"][1]
    for key in ("cell", "registry_key", "status", "problems", "seeds_present", "per_seed_job", "fallbacks",
                "per_seed", "mean_delta_pp", "std_delta_pp", "macro_baseline", "macro_deployed",
                "confidence_interval_delta_pp", "per_seed_exact_mcnemar_p", "per_seed_mcnemar_p_holm",
                "holm_family"):
        assert key in cell, key
    assert set(cell["per_seed_job"]["0"]) >= {
        "selected_candidate", "fallback_reason", "baseline_validation_score", "incumbent_validation_score",
        "charged_rollouts", "stop_reason", "optimization_status", "valid_for_aggregation", "failure_counts"}
    assert [p.name for p in out_file.parent.iterdir()] == ["summary.json"]  # no temp file left behind
    assert str(tmp_path) not in out_file.read_text()  # relative paths only (protocol 6)
    assert cell["jobs"][0] == "gepa/hotpotqa/sequential/qwen/0/result.json"


def test_failure_columns_show_dash_when_absent(tmp_path, write_cell, capsys):
    write_cell(failure_counts=False)
    assert main([str(tmp_path), "--bootstrap", "100"]) == 0
    row = capsys.readouterr().out.splitlines()[1].split("\t")
    assert row[-6:] == ["-"] * 6


def test_failure_columns_are_per_arm_not_the_sum_of_both(tmp_path, write_cell, capsys):
    paths = write_cell()
    assert main([str(tmp_path), "--bootstrap", "100"]) == 0
    lines = capsys.readouterr().out.splitlines()
    row = dict(zip(HEADER, lines[1].split("\t")))
    counts = [json.loads(path.read_text())["test"]["failure_counts"] for path in paths]
    for column, kind in (("sem_fail", "semantic_failures"), ("infra", "infrastructure_failures")):
        seed_arm = sum(c["baseline"][kind] for c in counts)
        deployed_arm = sum(c["deployed"][kind] for c in counts)
        assert (row[f"{column}_seed"], row[f"{column}_deployed"]) == (str(seed_arm), str(deployed_arm))
    first = counts[0]
    assert (f"sem_fail={first['baseline']['semantic_failures']}/{first['deployed']['semantic_failures']} "
            "(seed/deployed)") in lines[2]
    assert "sem_fail" not in HEADER and "infra" not in HEADER


def test_nonconformant_included_with_flag(tmp_path, write_cell, capsys):
    write_cell(conformant=False)
    assert main([str(tmp_path), "--bootstrap", "100", "--include-nonconformant", "--family", "none"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and len(captured.out.splitlines()) == 5


def test_plot_without_matplotlib_exits_2(tmp_path, write_cell, capsys, monkeypatch):
    write_cell()
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main([str(tmp_path), "--plot", str(tmp_path / "plots")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "'plot' extra" in captured.err
    assert not (tmp_path / "plots").exists()


@pytest.mark.slow
def test_plots_are_written(tmp_path, write_cell, capsys):
    pytest.importorskip("matplotlib")
    write_cell()
    curve = [{"charged_rollouts": x, "native_observed_score": 0.4 + x / 3000} for x in range(0, 601, 10)]
    write_job(tmp_path / "runs", make_result(0, grid=dict(GRID, topology="centralized")),
              learning_curve=curve + [{"charged_rollouts": 610}])
    write_cell(seeds=(1, 2), grid=dict(GRID, topology="centralized"))
    plots = tmp_path / "plots"
    assert main([str(tmp_path / "runs"), "--bootstrap", "100", "--plot", str(plots)]) == 0
    names = sorted(p.name for p in plots.iterdir())
    assert names == ["failures_hotpotqa.png", "forest_hotpotqa.png", "learning_curves_hotpotqa_gepa.png",
                     "levels_gepa_qwen.png"]
    assert all((plots / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for name in names)
    assert "skipped line (KeyError)" in capsys.readouterr().err
