"""A sweep's per-job concurrency counts every task endpoint, wherever the URLs came from (issue 36 bug): four
endpoints from --endpoints-file or TASK_ENDPOINTS give a job the same in-flight rollouts as four --task-endpoint
flags (before the fix only the flags were counted, so the other two sources got a quarter of them)."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest

import engine.sweep.run_cmd as run_cmd

URLS = [f"http://127.0.0.1:{9100 + i}/v1" for i in range(4)]
SELECTION = ["--runtime", "native", "--tasks", "bfcl", "--methods", "identity", "--topologies", "single",
             "--table", "3", "--seeds", "0"]


def job_concurrency(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *endpoint_args: str) -> int:
    """The per-job concurrency `sweep run` hands its jobs (the start-up check and the run itself stubbed)."""
    seen: dict[str, Any] = {}

    async def checked(*args: Any, **kwargs: Any) -> None:
        return None

    def captured(args: Any, jobs: Any, sweep_dir: Any, settings: Any, *rest: Any, **kw: Any) -> dict[str, int]:
        seen["settings"] = settings
        return {"finished": 0, "degraded": 0, "failed": 0, "not_implemented": 0, "pending": 0, "running": 0}

    monkeypatch.setattr(run_cmd, "preflight", checked)
    monkeypatch.setattr(run_cmd, "run_checked", captured)
    model = [] if "--simulated" in endpoint_args else ["--model-id", "m"]
    code = run_cmd.run_main(["--sweep-dir", str(tmp_path / "sw"), *SELECTION, *model, "--limit", "8",
                             "--no-aggregate", *endpoint_args])
    assert code == 0
    return int(seen["settings"].concurrency)


def test_every_endpoint_source_gives_the_same_per_job_concurrency(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("TASK_ENDPOINTS", raising=False)
    monkeypatch.delenv("VLLM_BASE_URL", raising=False)
    flags = job_concurrency(tmp_path, monkeypatch, *[a for u in URLS for a in ("--task-endpoint", u)])
    listing = tmp_path / "endpoints.txt"
    listing.write_text("# from sweep serve\n" + "\n".join(URLS) + "\n", encoding="utf-8")
    from_file = job_concurrency(tmp_path, monkeypatch, "--endpoints-file", str(listing))
    monkeypatch.setenv("TASK_ENDPOINTS", ",".join(URLS))
    from_env = job_concurrency(tmp_path, monkeypatch)
    assert flags == 4 * 8  # --limit per endpoint, times four endpoints
    assert from_file == flags and from_env == flags


def test_a_simulated_sweep_counts_its_one_endpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(run_cmd, "simulated", lambda tasks, data_dir, delay: nullcontext("http://127.0.0.1:9/v1"))
    assert job_concurrency(tmp_path, monkeypatch, "--simulated") == 8


def test_a_sweep_checks_every_endpoint_once_and_aggregates_in_process(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch, capsys):
    """One start-up check per pass over the jobs (before, the sweep checked in its own event loop and then the
    executor's pool checked again), and the summary written by a function call, not through `aggregate`'s argv."""
    import engine.aggregate.cli
    import engine.sweep.endpoints as endpoints

    checks: list[list[str]] = []
    real = endpoints.check_endpoints

    async def counted(targets: Any, timeout: float) -> Any:
        checks.append([t.role for t in targets])
        return await real(targets, timeout)

    def no_argv(argv: Any = None) -> int:
        raise AssertionError("the sweep aggregates through functions, not `aggregate`'s command line")

    monkeypatch.setattr(endpoints, "check_endpoints", counted)
    monkeypatch.setattr(engine.aggregate.cli, "main", no_argv)
    code = run_cmd.run_main(["--sweep-dir", str(tmp_path / "sw"), *SELECTION, "--simulated", "--budget", "20",
                             "--allow-small-budget", "--quiet", "--include-nonconformant"])
    assert code == 0
    assert checks == [["task endpoint"]]  # identity needs no reflection endpoint
    assert (tmp_path / "sw" / "summary.json").is_file() and "identity\tbfcl\tsingle" in capsys.readouterr().out
