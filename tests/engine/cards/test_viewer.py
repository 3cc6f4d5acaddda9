"""`card view` in a real browser: Playwright driving headless system Chromium over file:// (no server, no network).

Skipped, with the reason, only when Playwright or a Chromium executable is missing (`.ci/run` installs both; the
browser is the OS package, never a download). A screenshot of an opened multi-agent rollout is kept as a test
artifact under the test's tmp dir."""

from __future__ import annotations

import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from engine.cards.bundle import Bundle
from engine.cards.cli import main
from engine.cards.export import export_card
from engine.job.config import JobConfig, build_config
from engine.job.run_job import run_job
from engine.runner import RetryPolicy
from engine.sim.faults import FaultPlan, ScheduledFault
from tests.conftest import start_sim
from tests.engine.cards.cardutil import lines
from tests.fakebench import FakeBench

sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (extra cards-test)")
FAILING_ROW = "q21"


def chromium() -> str | None:
    candidates = [os.environ.get("MPB_CHROMIUM"), shutil.which("chromium"), shutil.which("chromium-browser"),
                  shutil.which("google-chrome")]
    return next((c for c in candidates if c and Path(c).exists()), None)


@pytest.fixture(scope="module")
def team_card(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 4-agent sequential job; every request for test row q21 fails with HTTP 500 (3 attempts, then failed)."""
    root = tmp_path_factory.mktemp("viewer")
    bench = FakeBench(n_train=12, n_validation=8, n_test=10)
    bench.name = "gpqa"  # type: ignore[misc]  # the gpqa team spec applies; the rows stay the fake sums
    server = start_sim(bench, faults=FaultPlan(schedule=[ScheduledFault(kind="http_500", row_id=FAILING_ROW)]))
    try:
        cfg = build_config(cell="task=gpqa,topology=sequential,team_size=4", method="identity", seed=1,
                           out=str(root / "job"), budget=600, task_endpoints=[server.base_url], model_id="test-model",
                           data_dir=None, concurrency=8, quiet=True, request_timeout=5.0)
        anyio.run(run_job, JobConfig(**{**cfg.__dict__, "retry": RetryPolicy(base_delay=0.0)}), bench)
    finally:
        server.stop()
    export_card(root / "job", root / "card")
    return root / "card"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = chromium()
    if executable is None:
        pytest.skip("no Chromium executable (install the OS package `chromium`; set MPB_CHROMIUM to another path)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=["--no-sandbox"])
        yield browser
        browser.close()


def test_viewer_in_a_real_browser(team_card, browser, tmp_path):
    assert main(["view", str(team_card), "--out", str(tmp_path / "view")]) == 0
    html = (tmp_path / "view" / "index.html").read_text(encoding="utf-8")
    assert "http://" not in html.split("<script id=card-data")[0] and "<link" not in html  # nothing to fetch
    card = Bundle.load(team_card)
    outcomes = {a["target_id"]: a["payload"] for a in lines(card, "annotations") if a["namespace"] == "mpb.rollout"}
    scores = {a["target_id"]: a["payload"]["value"] for a in lines(card, "annotations") if a["namespace"] == "mpb.score"}

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    problems: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    page.goto((tmp_path / "view" / "index.html").as_uri())
    rows = page.locator("tr.rollout")
    assert rows.count() == len(outcomes)  # every rollout is listed
    assert sorted(rows.evaluate_all("rs => rs.map(r => r.dataset.example)")) == sorted(
        o["example_id"] for o in outcomes.values())

    # a failed rollout is marked
    failed = page.locator("tr.rollout.failed")
    n_failed = sum(o["status"] == "infrastructure_failure" for o in outcomes.values())
    assert failed.count() == n_failed >= 1
    assert all(t.startswith("✖ infrastructure_failure") for t in failed.locator("td.status").all_inner_texts())

    # opening a multi-agent rollout shows its agents (who read whom), its calls and its score
    target = next(r for r, o in outcomes.items() if o["phase"] == "test" and o["status"] != "infrastructure_failure")
    index = rows.evaluate_all("rs => rs.map(r => r.dataset.example)").index(outcomes[target]["example_id"])
    rows.nth(index).click()
    detail = page.locator("#detail")
    assert detail.locator("g.agent").count() == 4
    assert detail.locator("path.read").count() == sum(1 for e in lines(card, "edges")
                                                      if e["source_node_id"].startswith(target + "#"))
    assert detail.locator(".call").count() == 4
    assert page.locator("#detail-score").inner_text() == str(int(scores[target]))
    assert detail.locator("td.rule-score").first.inner_text() == f"score {int(scores[target])}"
    shot = tmp_path / "multi-agent-rollout.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000

    # the failed rollout: its calls are errored and its retries marked
    failed.first.click()
    assert page.locator("#detail-status").inner_text() == "infrastructure_failure"
    assert detail.locator(".call.errored").count() == 3 and detail.locator(".call.retry").count() == 2

    # the search box filters by example id
    page.fill("#search", FAILING_ROW)
    visible = page.locator("tr.rollout:visible")
    assert visible.count() == sum(o["example_id"] == FAILING_ROW for o in outcomes.values()) >= 1 and set(visible.evaluate_all("rs => rs.map(r => r.dataset.example)")) == {
        FAILING_ROW}
    page.fill("#search", "")
    assert page.locator("tr.rollout:visible").count() == len(outcomes)

    assert problems == []
    assert all(url.startswith("file://") for url in requests), requests
    page.close()


HOSTILE = "</script><script>window.pwned=1</script><img src=x onerror=\"window.pwned=2\">"


def _hostile_card(root: Path) -> Path:
    """A store whose example id, model response and score feedback are markup, with optimize-phase rollouts of two
    candidate bundles (for the learning curve)."""
    from engine.store import Store

    async def go() -> None:
        async with Store(root / "card.sqlite", run_id="r1") as store:
            await store.add_node(node_id="run/r1", parent_id=None, instance_key="r1", task_key="job",
                                 status="running", worker_key=None, level=0, actor="test")
            for i, (bundle, value) in enumerate([("b1", 0.0), ("b1", 1.0), ("b2", 1.0), ("b2", 1.0)]):
                node = f"optimize/{HOSTILE}/{i}"
                await store.add_node(node_id=node, parent_id="run/r1", instance_key=HOSTILE, task_key="optimize",
                                     status="running", worker_key=None, level=1, actor="test")
                await store.record_event(execution_id=f"{node}#g0a1", node_id=node, worker_key="solver.0", sequence=0,
                                         event_type="model_call", turn_id=None, started_at="2026-01-01T00:00:00Z",
                                         completed_at=None, payload={"request": {"messages": [
                                             {"role": "user", "content": HOSTILE}]},
                                             "response": {"content": HOSTILE}, "error": None})
                await store.annotate("node", node, "mpb.score", {"value": value, "feedback": HOSTILE}, actor="test")
                await store.annotate("node", node, "mpb.rollout", {
                    "status": "success" if value else "semantic_failure", "example_id": HOSTILE, "phase": "optimize",
                    "attempts": 1, "bundle_sha256": bundle, "position": i, "budget_exhausted": False},
                    actor="test")
                await store.set_node_status(node, "completed", actor="test", reason="done")
            await store.set_node_status("run/r1", "completed", actor="test", reason="done")

    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API holds this thread's event loop
        pool.submit(anyio.run, go).result()
    export_card(root, root / "card")
    return root / "card"


def test_card_text_never_runs_as_markup_and_the_curve_is_drawn(browser, tmp_path):
    card = _hostile_card(tmp_path)
    from engine.cards.view import view_data

    curve = view_data(Bundle.load(card))["curve"]
    assert [(p["x"], p["y"], p["n"]) for p in curve["points"]] == [(2, 0.5, 2), (4, 1.0, 2)]
    assert curve["line"] == [[2, 0.5], [4, 0.5], [4, 1.0], [4, 1.0]]  # no recorded seed: the best so far
    assert main(["view", str(card), "--out", str(tmp_path / "view")]) == 0
    page = browser.new_page()
    problems: list[str] = []
    requests: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("request", lambda r: requests.append(r.url))
    page.goto((tmp_path / "view" / "index.html").as_uri())
    assert page.locator("tr.rollout").count() == 4
    assert page.locator("#curve circle").count() == 2
    page.locator("tr.rollout").first.click()
    assert page.locator("#detail pre.response").first.inner_text() == HOSTILE  # shown as text
    page.fill("#search", "onerror=")  # markup in the responses is searched as text, never run
    assert page.locator("tr.rollout:visible").count() == 4
    assert page.locator("#candidate-table tr.candidate").count() == 2  # b1, b2 (no bundle records: C1, C2)
    assert page.evaluate("window.pwned === undefined")
    assert page.locator("img").count() == 0
    assert problems == [] and all(url.startswith("file://") for url in requests), (problems, requests)
    page.close()


def test_viewer_reads_a_parquet_export_and_shows_the_bundles(team_card, browser, tmp_path):
    pytest.importorskip("pyarrow", reason="pyarrow is not installed (extra parquet)")
    assert main(["export", str(team_card), "--format", "parquet", "--out", str(tmp_path / "pq")]) == 0
    assert main(["view", str(tmp_path / "pq"), "--out", str(tmp_path / "view")]) == 0
    roles = [json.loads(line)["roles"] for line in Bundle.load(team_card).files["bundles.jsonl"].splitlines()]
    page = browser.new_page()
    page.goto((tmp_path / "view" / "index.html").as_uri())
    assert page.locator("tr.rollout").count() == sum(
        1 for a in lines(Bundle.load(team_card), "annotations") if a["namespace"] == "mpb.rollout")
    page.locator("details.bundle").first.click()
    shown = page.locator("details.bundle").first.locator("pre").all_inner_texts()
    assert shown == list(roles[0].values()) and len(shown) == 4
    page.close()
