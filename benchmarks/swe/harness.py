"""The runners' SWE rule: resolved = every FAIL_TO_PASS and PASS_TO_PASS test passes in the instance's
SWE-bench image after applying test_patch + the model patch. This delegates to the official harness
(`python -m swebench.harness.run_evaluation`), which needs Docker and the `swebench` package; without them
it raises HarnessUnavailable (a UsageError: the rule cannot be evaluated on this machine).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from core.errors import ScorerError, UsageError
from core.models import Row, Score

from benchmarks.swe import loader

HARNESS_TIMEOUT_SECONDS = 45 * 60
MODEL_NAME = "mas-promptbench"


class HarnessUnavailable(UsageError):
    kind = "swe_harness_unavailable"


def require_harness() -> None:
    if shutil.which("docker") is None:
        raise HarnessUnavailable("the SWE-bench harness rule needs Docker (docker not found on PATH); the protocol "
                                 "metric (structural diff check) needs neither")
    if importlib.util.find_spec("swebench") is None:
        raise HarnessUnavailable("the SWE-bench harness rule needs the swebench package (pip install swebench)")


def run_harness(row: Row, patch: str, run_id: str = "mpb") -> Score:
    """Grade one instance with the official harness (slow: pulls the image, runs the tests)."""
    require_harness()
    with tempfile.TemporaryDirectory(prefix="mpb-swe-") as tmp:
        predictions = Path(tmp, "predictions.jsonl")
        predictions.write_text(json.dumps({"instance_id": row.id, "model_name_or_path": MODEL_NAME,
                                           "model_patch": patch}) + "\n", encoding="utf-8")
        cmd = [sys.executable, "-m", "swebench.harness.run_evaluation", "--dataset_name", loader.HF_REPO,
               "--predictions_path", str(predictions), "--instance_ids", row.id, "--run_id", run_id,
               "--max_workers", "1", "--report_dir", tmp]
        try:
            proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=HARNESS_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired as exc:
            raise ScorerError(f"SWE-bench harness timed out on {row.id}") from exc
        reports = list(Path(tmp).rglob("report.json"))
        if proc.returncode != 0 or not reports:
            raise ScorerError(f"SWE-bench harness failed on {row.id}: {proc.stderr[-500:]}")
        report = json.loads(reports[0].read_text(encoding="utf-8")).get(row.id, {})
    resolved = bool(report.get("resolved"))
    return Score(value=1.0 if resolved else 0.0,
                 feedback="Resolved: all FAIL_TO_PASS and PASS_TO_PASS tests pass." if resolved else
                 "Not resolved: some FAIL_TO_PASS or PASS_TO_PASS tests fail after applying the patch.",
                 metadata={"rule": "swebench_harness", "report": report})
