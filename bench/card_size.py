"""Size of rollout cards per rollout, against the paper's Table 13 (F.2).

    python bench/card_size.py [--keep DIR]

Runs one job on the fake benchmark (12 train / 20 validation / 30 test rows, method identity) against the
simulated OpenAI-compatible endpoint, exports its card as a deterministic .zip and prints KB per rollout (zip
bytes / rollout nodes) and uncompressed KB per rollout. A 4-agent card is measured for every topology other than
`single` registered in topologies.registry.TOPOLOGIES; otherwise the script says so. Prints figures only.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.cards.bundle import Bundle  # noqa: E402
from engine.cards.export import export_card  # noqa: E402
from engine.job.config import JobConfig, build_config  # noqa: E402
from engine.job.run_job import run_job  # noqa: E402
from engine.runner import RetryPolicy  # noqa: E402
from tests.conftest import start_sim  # noqa: E402
from tests.fakebench import FakeBench  # noqa: E402
from topologies.registry import TOPOLOGIES  # noqa: E402

PAPER_KB_PER_RUN = {"one-step trace (GPQA, Table 13)": 5.3, "one-step trace (MMLU)": 1.8,
                    "multi-step tool trace (tau-bench)": 90.8}


def measure(root: Path, topology: str, team_size: int) -> dict[str, float]:
    bench = FakeBench(n_train=12, n_validation=20, n_test=30)
    bench.name = "gpqa"  # type: ignore[misc]  # the gpqa team spec applies; the rows stay the fake sums
    server = start_sim(bench)
    out = root / f"job-{topology}"
    try:
        cell = f"task=gpqa,topology={topology}" + (f",team_size={team_size}" if team_size > 1 else "")
        cfg = build_config(cell=cell, method="identity", seed=1, out=str(out), budget=600,
                           task_endpoints=[server.base_url], model_id="test-model", data_dir=None, concurrency=8,
                           quiet=True, request_timeout=5.0)
        cfg = JobConfig(**{**cfg.__dict__, "retry": RetryPolicy(base_delay=0.0)})
        anyio.run(run_job, cfg, bench)
    finally:
        server.stop()
    zip_path = root / f"card-{topology}.zip"
    bundle = export_card(out, zip_path, as_zip=True)
    manifest = json.loads(bundle.files["manifest.json"])
    rollouts = sum(1 for loc in Bundle.load(zip_path).rows("nodes")[0] if loc.row.get("level") == 1)
    raw = sum(len(v) for v in bundle.files.values())
    return {"rollouts": rollouts, "zip_kb": zip_path.stat().st_size / 1024, "raw_kb": raw / 1024,
            "events": manifest["streams"]["events"]["rows"], "mutations": manifest["streams"]["mutations"]["rows"]}


def report(label: str, m: dict[str, float]) -> None:
    per = m["zip_kb"] / m["rollouts"]
    print(f"{label}: {int(m['rollouts'])} rollouts, {int(m['events'])} events, {int(m['mutations'])} mutations; "
          f"zip {m['zip_kb']:.1f} KB = {per:.2f} KB/rollout (uncompressed {m['raw_kb'] / m['rollouts']:.2f} "
          f"KB/rollout)")
    for name, kb in PAPER_KB_PER_RUN.items():
        print(f"    vs paper {name}: {kb} KB/run -> ratio {per / kb:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, default=None, help="keep the jobs and cards in DIR")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        report("single-agent card (fake benchmark, simulated endpoint)", measure(root, "single", 1))
        multi = [name for name in TOPOLOGIES if name != "single"]
        for name in multi:
            report(f"4-agent card ({name}, team_size 4)", measure(root, name, 4))
        if not multi:
            print("4-agent card: not available yet (topologies.registry.TOPOLOGIES registers only 'single')")
    print("note: the paper's sizes are parquet exports of real model traces; the simulated endpoint's replies are "
          "short, so compare orders of magnitude, not exact ratios")


if __name__ == "__main__":
    main()
