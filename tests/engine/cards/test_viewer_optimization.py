"""`card view` tells the optimization, in a real browser (Playwright + system Chromium over file://): on a GEPA card
(single agent) and a MAPRO card (4-agent sequential team), both simulated, with HTTP 500 on every request of train
row q3 and on the first occurrence of every reflection request: the simulated / non-conformant banner with the
reported model ids, the candidate of each rollout and the candidate list, the learning curve's labelled axes, the
seed-vs-deployed diff, the reflection (and judge / probe) calls with their failures, and search over prompt and
response text. Screenshots are saved under each test's tmp dir."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.cards.bundle import Bundle
from engine.cards.cli import main
from engine.cards.export import export_card
from engine.sim.faults import FaultPlan, ScheduledFault
from tests.conftest import start_sim
from tests.engine.cards.cardutil import lines
from tests.engine.cards.test_viewer import chromium
from tests.engine.jobutil import run
from tests.fakebench import FakeBench

sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (extra cards-test)")
pytestmark = pytest.mark.slow  # two optimization jobs and a browser: over 5 s
CELLS = {"gepa": "task=gpqa,topology=single", "mapro": "task=gpqa,topology=sequential,team_size=4"}


def _bench() -> FakeBench:
    bench = FakeBench(n_train=12, n_validation=8, n_test=10)
    bench.name = "gpqa"  # type: ignore[misc]  # the gpqa team spec applies; the rows stay the fake sums
    return bench


@pytest.fixture(scope="module")
def cards(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for method, cell in CELLS.items():
        root = tmp_path_factory.mktemp(method)
        plan = FaultPlan(schedule=[ScheduledFault(kind="http_500", row_id="q3"),
                                   ScheduledFault(kind="http_500", model="simulated-reflection", occurrence=0)])
        server = start_sim(_bench(), faults=plan)
        try:
            run(root / "job", server.base_url, _bench(), method=method, budget=60, cell=cell)
        finally:
            server.stop()
        export_card(root / "job", root / "card")
        out[method] = root / "card"
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = chromium()
    if executable is None:
        pytest.skip("no Chromium executable (install the OS package `chromium`; set MPB_CHROMIUM to another path)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=["--no-sandbox"])
        yield browser
        browser.close()


def _open(browser: Any, card: Path, out: Path) -> tuple[Any, list[str]]:
    assert main(["view", str(card), "--out", str(out)]) == 0
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("request", lambda r: problems.append(r.url) if not r.url.startswith("file://") else None)
    page.goto((out / "index.html").as_uri())
    return page, problems


@pytest.mark.parametrize("method", ["gepa", "mapro"])
def test_the_viewer_tells_the_optimization(cards, browser, tmp_path, method):
    card = Bundle.load(cards[method])
    manifest = json.loads(card.files["manifest.json"])
    bundles = [json.loads(x) for x in card.files["bundles.jsonl"].splitlines()]
    seed = next(b for b in bundles if "seed" in b["used_as"])
    deployed = next(b for b in bundles if "deployed" in b["used_as"])
    assert seed["bundle_sha256"] != deployed["bundle_sha256"]
    outcomes = {a["target_id"]: a["payload"] for a in lines(card, "annotations") if a["namespace"] == "mpb.rollout"}
    page, problems = _open(browser, cards[method], tmp_path / "view")

    # the banner: simulated and non-conformant, with the model the task endpoint reported; the header does not
    # present the cell's task_model label as the model used
    assert manifest["run"]["protocol_conformant"] is False
    assert page.locator("#banner-title").inner_text() == "Simulated run · Not protocol-conformant"
    reported = [r["reported_model"] for r in manifest["run"]["derivation"]["job"]["endpoint_reports"]]
    assert all(m in page.locator("#banner-models").inner_text() for m in reported)
    title = page.locator("#title").inner_text()
    assert "task_model=qwen" not in title and "model simulated/test-model" in title and "SIMULATED" in title

    # each rollout names the candidate it evaluated; the list names seed and deployed by their hashes
    names = {r.get_attribute("data-name"): r for r in page.locator("tr.candidate").all()}
    assert list(names)[:2] == ["seed", "C1"]
    shown = {n: r.inner_text() for n, r in names.items()}
    assert seed["bundle_sha256"][:12] in shown["seed"] and deployed["bundle_sha256"][:12] in shown["C1"]
    assert "yes: deployed, incumbent" in shown["C1"] and method in shown["C1"]
    name_of = {seed["bundle_sha256"]: "seed", deployed["bundle_sha256"]: "C1"}
    rows = page.locator("tr.rollout")
    assert rows.count() == len(outcomes)
    by_example = rows.evaluate_all("rs => rs.map(r => [r.dataset.candidate, r.querySelector('td.candidate')"
                                   ".textContent])")
    assert sorted(c for c, _ in by_example) == sorted(name_of[o["bundle_sha256"]] for o in outcomes.values())
    assert all(c == t for c, t in by_example)
    optimize = {name_of[o["bundle_sha256"]] for o in outcomes.values() if o["phase"] == "optimize"}
    assert optimize == {"seed", "C1"}  # both were evaluated in the optimize phase

    # the learning curve: labelled axes with ticks, a line and one dot per evaluated candidate
    assert page.locator("#curve .x-label").text_content() == "rollouts charged"
    assert page.locator("#curve .y-label").text_content().startswith("score")
    assert page.locator("#curve .x-tick").count() == 5 and page.locator("#curve .y-tick").count() == 5
    charged = sum(1 for o in outcomes.values() if o["phase"] == "optimize" and o.get("charged") is not False)
    assert page.locator("#curve .x-tick").last.text_content() == str(charged)
    assert page.locator("#curve path.incumbent").count() == 1 and page.locator("#curve circle.candidate").count() == 2

    # the diff: every role of the deployed bundle changed; its added lines are shown on the deployed side only
    roles = page.locator("details.diff-role")
    assert roles.count() == len(deployed["roles"])
    for role, text in deployed["roles"].items():
        block = page.locator("details.diff-role", has_text=role).first
        added = [line for line in text.split("\n") if line not in seed["roles"][role].split("\n") and line]
        inserted = block.locator("td.ins").all_inner_texts()
        assert added and all(line in inserted for line in added)

    # the reflection calls (and MAPRO's judge and probe calls), with their failures
    events = [e for e in lines(card, "events") if e["payload"].get("component")]
    failed = [e for e in events if e["payload"]["error"] is not None]
    assert failed and {e["payload"]["component"] for e in failed} == {"reflection"}
    assert page.locator("tr.opt-call").count() == len(events)
    assert page.locator("tr.opt-call.failed").count() == len(failed)
    summary = page.locator("#calls-summary").inner_text()
    assert f"{len(failed)} failed" in summary and (method == "gepa" or ("judge" in summary and "probe" in summary))
    page.locator("tr.opt-call.failed").first.click()
    assert "HTTP 500" in page.locator("#call-detail pre.failed-mark").inner_text()
    page.screenshot(path=str(tmp_path / f"{method}-optimization.png"), full_page=True)
    assert (tmp_path / f"{method}-optimization.png").stat().st_size > 20_000

    # text search: a phrase of a response, not an example id, finds exactly the rollouts whose calls hold it
    phrase = "answer: 18"
    def holds(rollout: str) -> bool:
        texts = [json.dumps(e["payload"].get("request", {}).get("messages")) + str(
            (e["payload"].get("response") or {}).get("content")) for e in lines(card, "events")
            if e["task_execution_id"].split("#", 1)[0] == rollout]
        return any(phrase in t.lower() for t in texts)
    expected = sorted(outcomes[r]["example_id"] for r in outcomes if holds(r))
    page.fill("#search", phrase)
    visible = page.locator("tr.rollout:visible").evaluate_all("rs => rs.map(r => r.dataset.example)")
    assert sorted(visible) == expected and 0 < len(expected) < len(outcomes)
    page.fill("#search", "mutation" if method == "gepa" else "mapro.probe")
    assert page.locator("tr.opt-call:visible").count() == sum(
        1 for e in events if e["payload"]["purpose"] == ("gepa.mutation" if method == "gepa" else "mapro.probe"))
    page.fill("#search", "")
    assert page.locator("tr.rollout:visible").count() == len(outcomes)
    page.screenshot(path=str(tmp_path / f"{method}-search.png"), full_page=True)
    assert problems == []
    page.close()
