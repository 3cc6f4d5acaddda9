"""The reading side of live sweeps on a sweep.sqlite written here (no endpoint): running vs stale by the job lock and
the driver, the totals, the lock probe never refusing a job that starts meanwhile, and the HTML page in Chromium
(skipped without Playwright or a Chromium executable, as the card viewer's browser test)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from engine.job.lock import job_lock
from engine.sweep.live import lock_held, read_sweep
from engine.sweep.plan import JobSpec
from engine.sweep.state import SweepState
from engine.sweep.status import render_html, write_atomic

CELL = "task=bfcl,topology=single,model=qwen"


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def snapshot(phase: str, done: int, total: int, rollouts: int) -> dict[str, object]:
    return {"phase": phase, "done": done, "total": total, "failures": {"semantic_failure": 2}, "rate": 4.0,
            "eta": 3.5, "rollouts": rollouts}


@pytest.fixture
def sweep_dir(tmp_path: Path) -> Path:
    """Three jobs: `gone` (driver dead, lock free), `held` (driver dead but its lock held), `done` (finished)."""
    specs = [JobSpec(method="identity", cell=CELL, seed=s, tables=(3,), registry_key="single", runnable=True)
             for s in (0, 1, 2)]
    state = SweepState(tmp_path / "sweep.sqlite")
    state.check_settings({"budget": 20})
    state.add(specs)
    for s in specs:
        state.start(s.key)
        (tmp_path / "runs" / s.key).mkdir(parents=True)
    gone, held, done = (s.key for s in specs)
    state.record_progress({gone: snapshot("validation evaluation", 10, 50, 10),
                           held: snapshot("test evaluation", 30, 100, 80), done: snapshot("test evaluation", 100,
                                                                                          100, 150)}, set())
    state.finish(done, {"delta_pp": 0.0})
    state._conn.execute("UPDATE progress SET pid=?", (dead_pid(),))
    state.close()
    return tmp_path


def test_running_is_told_by_the_lock_and_stale_keeps_the_last_progress(sweep_dir):
    keys = sorted(p.relative_to(sweep_dir / "runs").as_posix() for p in (sweep_dir / "runs").glob("*/*/*/*/*"))
    gone, held, done = keys
    with job_lock(sweep_dir / "runs" / held):
        assert lock_held(sweep_dir / "runs" / held / ".job.lock")
        view = read_sweep(sweep_dir)
    shown = {j.row.key: j.shown for j in view.jobs}
    assert shown == {gone: "stale", held: "running", done: "finished"}
    stale = next(j for j in view.jobs if j.row.key == gone)
    assert stale.progress is not None and stale.progress.snapshot["done"] == 10
    assert view.counts["stale"] == 1 and view.counts["running"] == 1 and view.counts["finished"] == 1
    planned = stale.planned
    assert planned is not None and view.planned == 3 * planned
    assert view.done == 10 + 80 + planned  # a finished job counts as done
    assert not lock_held(sweep_dir / "runs" / held / ".job.lock")  # released with its holder
    assert read_sweep(sweep_dir).counts["stale"] == 2


def test_a_status_probe_never_refuses_a_job_that_takes_its_lock_meanwhile(tmp_path):
    (tmp_path / ".job.lock").touch()
    probe = open(tmp_path / ".job.lock", "rb")
    fcntl.flock(probe.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)  # a probe caught in the act
    releaser = threading.Timer(0.05, probe.close)
    releaser.start()
    try:
        with job_lock(tmp_path):  # retries while the probe holds its instant
            assert lock_held(tmp_path / ".job.lock")
    finally:
        releaser.join()


def test_write_atomic_replaces_whole_files(tmp_path):
    out = tmp_path / "site" / "index.html"
    write_atomic(out, "one")
    write_atomic(out, "two")
    assert out.read_text() == "two" and [p.name for p in out.parent.iterdir()] == ["index.html"]


def chromium() -> str | None:
    """As tests/engine/cards/test_viewer.py finds it."""
    candidates = [os.environ.get("MPB_CHROMIUM"), shutil.which("chromium"), shutil.which("chromium-browser"),
                  shutil.which("google-chrome")]
    return next((c for c in candidates if c and Path(c).exists()), None)


@pytest.mark.slow
def test_the_status_page_in_chromium(sweep_dir, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (extra cards-test)")
    executable = chromium()
    if executable is None:
        pytest.skip("no Chromium executable (install the OS package `chromium`; set MPB_CHROMIUM to another path)")
    view = read_sweep(sweep_dir)
    page_path = tmp_path / "status.html"
    write_atomic(page_path, render_html(view, refresh=1.0))
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            failed: list[str] = []
            page.on("requestfailed", lambda r: failed.append(r.url))
            page.goto(page_path.as_uri())
            assert page.title() == "sweep status"
            statuses = page.eval_on_selector_all("#jobs tbody tr", "rows => rows.map(r => r.dataset.status)")
            assert sorted(statuses) == ["finished", "stale", "stale"]
            assert page.inner_text("#totals").startswith(f"rollouts {view.done}/{view.planned}")
            assert "stale=2" in page.inner_text("#counts")
            stale_bg = page.eval_on_selector("tr.stale", "r => getComputedStyle(r).backgroundColor")
            assert stale_bg == "rgb(253, 226, 226)"  # the page's own style applies: self-contained
            refresh = page.eval_on_selector('meta[http-equiv="refresh"]', "m => m.content")
            assert refresh == "1"  # the browser reloads it every second when served
            assert failed == []
        finally:
            browser.close()
