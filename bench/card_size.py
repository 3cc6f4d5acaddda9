"""Size and validation time of rollout cards.

    python bench/card_size.py [--rollouts 600] [--topology sequential] [--keep DIR]

Runs two jobs on the fake benchmark (method identity) against the simulated OpenAI-compatible endpoint: a
single-agent one and a 4-agent one (team_size 4, default topology `sequential`), each with about ROLLOUTS
rollouts (validation + test rows; one test row fails with HTTP 500 on every attempt), exports each card and prints:

- KB per rollout: JSONL card raw (sum of its files) and zipped, Parquet export raw and zipped, and against the
  paper's Table 13 sizes;
- the share of the mutation stream that storing annotation values once saves (payload copies no longer repeated);
- `card validate` wall time (every check, including the recomputation of every recorded rule), the part spent
  recomputing rules, and the ratio against a baseline measured in the same process: reading the card and hashing
  its files (target: validate < 10 s on the 600-rollout 4-agent card);
- `card view` build time and page size.

Prints figures only; speed is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.sumbench import SumBench  # noqa: E402
from core.canonical import content_hash, sha256_hex  # noqa: E402
from engine.cards.bundle import Bundle  # noqa: E402
from engine.cards.export import export_card  # noqa: E402
from engine.cards.recompute import recompute_rules  # noqa: E402
from engine.cards.validate import validate_path  # noqa: E402
from engine.cards.view import write_view  # noqa: E402
from engine.job.config import JobConfig, build_config  # noqa: E402
from engine.job.run_job import run_job  # noqa: E402
from engine.runner import RetryPolicy  # noqa: E402
from engine.sim.faults import FaultPlan, ScheduledFault  # noqa: E402
from engine.sim.policy import Policy  # noqa: E402
from engine.sim.server import SimServer  # noqa: E402

PAPER_KB_PER_RUN = {"one-step trace (GPQA, Table 13)": 5.3, "multi-step tool trace (tau-bench)": 90.8}


def run(root: Path, topology: str, team_size: int, rollouts: int) -> Path:
    n_val = max(2, rollouts // 6)
    bench = SumBench(n_train=12, n_validation=n_val, n_test=rollouts - n_val)
    failing = f"q{12 + n_val + 3}"
    policy = Policy({"gpqa": (bench, list(bench.rows.values()))}, model_ids=("test-model",))
    server = SimServer(policy, faults=FaultPlan(schedule=[ScheduledFault(kind="http_500", row_id=failing)]))
    server.start()
    out = root / f"job-{topology}-{team_size}"
    try:
        cell = f"task=gpqa,topology={topology}" + (f",team_size={team_size}" if team_size > 1 else "")
        cfg = build_config(cell=cell, method="identity", seed=1, out=str(out), budget=600,
                           task_endpoints=[server.base_url], model_id="test-model", data_dir=None, concurrency=32,
                           quiet=True, request_timeout=10.0)
        anyio.run(run_job, JobConfig(**{**cfg.__dict__, "retry": RetryPolicy(base_delay=0.0)}), bench)
    finally:
        server.stop()
    return out


def _zip_size(files: dict[str, bytes]) -> int:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name in sorted(files):
            zf.writestr(name, files[name])
    return len(buffer.getvalue())


def _duplicated_payload_bytes(card: Bundle) -> int:
    """What annotation.set mutations would weigh with the payload copied in instead of its 64-hex hash."""
    return sum(len(json.dumps(loc.row["payload"], separators=(",", ":"))) - 64 - len('"payload_sha256":""')
               for loc in card.rows("annotations")[0])


def measure(root: Path, label: str, job: Path) -> dict[str, Any]:
    card_dir = root / f"card-{job.name}"
    bundle = export_card(job, card_dir)
    rollouts = sum(1 for loc in bundle.rows("annotations")[0] if loc.row["namespace"] == "mpb.rollout")
    raw = sum(map(len, bundle.files.values()))
    zipped = _zip_size(bundle.files)
    from engine.cards.parquet import export_parquet

    parquet = export_parquet(bundle, root / f"parquet-{job.name}").files
    t0 = time.perf_counter()
    loaded = Bundle.load(card_dir)
    _ = [sha256_hex(d) for d in loaded.files.values()] + [content_hash(len(loaded.files))]
    baseline = time.perf_counter() - t0
    t0 = time.perf_counter()
    problems = validate_path(card_dir)
    validate_s = time.perf_counter() - t0
    registry = json.loads(loaded.files["reporting_rules.json"])
    drops = {n: json.loads(d) for n, d in loaded.files.items() if n.startswith("drops/")}
    rows = {s: loaded.rows(s)[0] for s in ("events", "nodes", "edges", "annotations", "mutations")}
    t0 = time.perf_counter()
    recompute_rules(loaded, registry, drops, rows)
    recompute_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    page = write_view(loaded, root / f"view-{job.name}")
    view_s = time.perf_counter() - t0
    mutations = len(loaded.files["mutations.jsonl"])
    saved = _duplicated_payload_bytes(loaded)
    per = zipped / 1024 / rollouts
    print(f"{label}: {rollouts} rollouts, {bundle.rows('events')[0].__len__()} events, "
          f"{len(rows['mutations'])} mutations; problems: {len(problems)}")
    print(f"    JSONL  raw {raw / 1024 / rollouts:7.2f} KB/rollout   zipped {per:6.2f} KB/rollout")
    print(f"    Parquet raw {sum(map(len, parquet.values())) / 1024 / rollouts:6.2f} KB/rollout   zipped "
          f"{_zip_size(parquet) / 1024 / rollouts:6.2f} KB/rollout")
    print(f"    annotation values stored once: mutations.jsonl {mutations / 1024:.0f} KB instead of "
          f"{(mutations + saved) / 1024:.0f} KB ({100 * saved / (mutations + saved):.0f}% of the stream saved)")
    print(f"    card validate {validate_s:.2f} s (rule recomputation {recompute_s:.2f} s); baseline read+hash "
          f"{baseline:.3f} s -> ratio {validate_s / baseline:.1f}x; target < 10 s: "
          f"{'met' if validate_s < 10 else 'NOT met'}")
    print(f"    card view {view_s:.2f} s, page {page.stat().st_size / 1024:.0f} KB; {browser_timing(page)}")
    for name, kb in PAPER_KB_PER_RUN.items():
        print(f"    vs paper {name}: {kb} KB/run -> ratio {per / kb:.2f}x")
    return {"rollouts": rollouts, "validate_s": validate_s}


def browser_timing(page: Path) -> str:
    """Open the page in headless system Chromium (when Playwright and a `chromium` executable exist): time to
    list every rollout, and to open one rollout's detail."""
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return "browser timing skipped (no Playwright)"
    if executable is None:
        return "browser timing skipped (no chromium executable)"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=["--no-sandbox"])
        tab = browser.new_page(viewport={"width": 1400, "height": 1000})
        t0 = time.perf_counter()
        tab.goto(page.as_uri())
        rows = tab.locator("tr.rollout").count()
        listed = time.perf_counter() - t0
        t0 = time.perf_counter()
        tab.locator("tr.rollout").nth(rows // 2).click()
        tab.locator("#detail .call").first.wait_for()
        opened = time.perf_counter() - t0
        browser.close()
    return f"Chromium lists {rows} rollouts in {listed:.2f} s, opens one in {opened:.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=600, help="rollouts per card (default 600)")
    parser.add_argument("--topology", default="sequential", help="4-agent topology (default sequential)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the jobs and cards in DIR")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        measure(root, "single-agent card", run(root, "single", 1, args.rollouts))
        measure(root, f"4-agent card ({args.topology}, team_size 4)", run(root, args.topology, 4, args.rollouts))
    print("note: the simulated endpoint's replies are short; compare orders of magnitude with the paper, not ratios")


if __name__ == "__main__":
    main()
