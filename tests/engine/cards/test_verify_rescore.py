"""`card verify --rescore`: the protocol scorer run again on every recorded final output, from the card and the
dataset alone. A clean card re-scores with no difference; swapped scores and a rewritten answer (scores kept, card
re-sealed so it still validates) are each reported, on BFCL (native tool calls) and on HotpotQA read from its
official layout (text answers)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from engine.cards.bundle import Bundle
from engine.cards.export import export_card
from engine.cards.validate import validate_bundle
from engine.job.config import build_config
from engine.job.run_job import run_job
from tests.engine.cards.cardutil import lines, reseal
from tests.engine.cards.test_forgery import edit_annotation
from tests.optimizers.hotpotqa_layout import write_hotpotqa_layout

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list[str]]]:
    """task -> (job dir, the extra `card verify` arguments it needs)."""
    root = tmp_path_factory.mktemp("verify")
    data_dir, wiki_dir = write_hotpotqa_layout(root / "data")
    specs = {"bfcl": ("task=bfcl,topology=single", None, {}, []),
             "hotpotqa": ("task=hotpotqa,topology=single", str(data_dir), {"wiki_dir": str(wiki_dir)},
                          ["--data-dir", str(data_dir), "--wiki-dir", str(wiki_dir)])}
    out = {}
    for task, (cell, data, options, extra) in specs.items():
        cfg = build_config(cell=cell, method="gepa", seed=0, out=str(root / f"job-{task}"), budget=None, task_endpoints=None,
                           model_id=None, data_dir=data, concurrency=16, quiet=True, smoke=6,
                           dataset_options=options)
        anyio.run(run_job, cfg)
        out[task] = (root / f"job-{task}", extra)
    return out


def verify(card: Bundle, where: Path, extra: list[str]) -> subprocess.CompletedProcess[str]:
    card.write_dir(where)
    return subprocess.run([sys.executable, "-m", "engine", "card", "verify", str(where), "--rescore", *extra],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


def scored(card: Bundle) -> dict[str, dict[str, Any]]:
    return {a["target_id"]: a["payload"] for a in lines(card, "annotations") if a["namespace"] == "mpb.score"}


def _swap(card: Bundle) -> set[str]:
    """Two rollouts of one evaluation (or both of the optimize phase) trade scores and statuses: every mean, count
    and rule recomputation stays the same."""
    scores = scored(card)
    claims = {a["target_id"]: a["payload"] for a in lines(card, "annotations") if a["namespace"] == "mpb.rollout"}
    groups: dict[tuple[Any, Any], dict[float, str]] = {}
    for node, p in scores.items():
        groups.setdefault((claims[node]["phase"], claims[node]["evaluation_id"]), {})[p["value"]] = node
    one, zero = next((g[1.0], g[0.0]) for g in groups.values() if {0.0, 1.0} <= set(g))
    for node, value, status in ((one, 0.0, "semantic_failure"), (zero, 1.0, "success")):
        edit_annotation(card, node, "mpb.score", lambda p, v=value: p.update(value=v))
        edit_annotation(card, node, "mpb.rollout", lambda p, s=status: p.update(status=s))
    return {one, zero}


def _rewrite(card: Bundle) -> set[str]:
    one = next(n for n, p in scored(card).items() if p["value"] == 1.0)

    def wrong(payload: dict[str, Any]) -> None:
        output = payload["final_output"]
        if output.get("tool_calls"):
            output["tool_calls"] = [{**call, "function": {**call["function"], "name": "not_the_right_function"}}
                                    if "function" in call else {**call, "name": "not_the_right_function"}
                                    for call in output["tool_calls"]]
        else:
            output["text"] = "FINAL ANSWER: certainly not the gold answer"

    edit_annotation(card, one, "mpb.rollout", wrong)
    return {one}


@pytest.mark.slow
@pytest.mark.parametrize("task", ["bfcl", "hotpotqa"])
def test_a_clean_card_rescores_with_no_difference(jobs, task, tmp_path):
    job, extra = jobs[task]
    proc = verify(export_card(job), tmp_path / "card", extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = proc.stdout.strip().splitlines()[-1]
    assert summary.startswith(f"task={task}: ") and " 0 differ" in summary
    assert int(summary.split(": ")[1].split(" ")[0]) > 0  # something was re-scored


@pytest.mark.slow
@pytest.mark.parametrize("task", ["bfcl", "hotpotqa"])
@pytest.mark.parametrize("forge", [_swap, _rewrite], ids=["swapped scores", "rewritten answer"])
def test_a_forged_score_is_reported(jobs, task, forge, tmp_path):
    job, extra = jobs[task]
    card = export_card(job)
    nodes = forge(card)
    reseal(card)
    assert not [p for p in validate_bundle(card) if p.code.startswith("E_")]  # the forgery validates
    proc = verify(card, tmp_path / "card", extra)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    reported = {line.split()[1] for line in proc.stdout.splitlines() if line.startswith("DIFFERS ")}
    assert reported == nodes


def test_verify_needs_a_job_card_and_rescore(tmp_path):
    (tmp_path / "x").mkdir()
    proc = subprocess.run([sys.executable, "-m", "engine", "card", "verify", str(tmp_path / "x")],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 2 and "--rescore" in proc.stderr
