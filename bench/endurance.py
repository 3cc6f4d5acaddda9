"""Endurance: a 600-rollout GEPA job on a 4-agent topology against two simulated endpoints, once healthy and once
with a fault mix, a 20 s outage of one endpoint and a 429 burst on the other (1 MB responses by default).

    python bench/endurance.py [--budget 600] [--pad-bytes 1000000] [--outage-s 20] [--concurrency 16]

Prints figures (asserts nothing): wall time of the faulty job against the fault-free one (and against fault-free +
outage), requests sent by the engine (from the card's pool summary) and wasted requests (sent minus the fault-free
run's), peak RSS of the job process, bytes on disk per rollout against response bytes per rollout, and whether
result.json equals the fault-free one (exactly, and apart from the counters that count failed attempts).
Each job runs in a child process (so its peak RSS is its own); the simulated endpoints run on threads here.
Targets from issue #10: same result, wall <= 1.3x fault-free + outage, peak RSS < 300 MB, disk <= 1.2x responses.
"""

from __future__ import annotations

import argparse
import json
import resource
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.sumbench import SumBench  # noqa: E402
from engine.sim.faults import FaultPlan, ScheduledFault  # noqa: E402
from engine.sim.policy import Policy  # noqa: E402
from engine.sim.server import SimServer  # noqa: E402

CELL = "task=gpqa,topology=independent,team_size=4"
SINGLE = "task=gpqa,topology=single"
MIX = {"http_500": 0.01, "http_503": 0.005, "reset": 0.005, "malformed_json": 0.004, "truncated_json": 0.002,
       "deep_nesting": 0.001, "huge_int": 0.001, "html_200": 0.001, "http_429": 0.01}


def policy() -> Policy:
    bench = SumBench()
    s = bench.splits()
    return Policy({"sum": (bench, bench.load_rows([*s.train, *s.validation, *s.test]))},
                  model_ids=("bench-model",))


def child(args: argparse.Namespace) -> None:
    import anyio

    from engine.job.config import JobConfig, build_config
    from engine.job.run_job import run_job
    from engine.runner import RetryPolicy

    cfg = build_config(cell=args.cell, method="gepa", seed=1, out=args.out, budget=args.budget,
                       task_endpoints=args.endpoints.split(","), model_id="bench-model", data_dir=None,
                       concurrency=args.concurrency, reflection_endpoint=args.endpoints.split(",")[1],
                       reflection_model="simulated-reflection", quiet=True, request_timeout=30.0,
                       allow_small_budget=args.budget < 600)
    cfg = JobConfig(**{**cfg.__dict__, "retry": RetryPolicy(base_delay=0.05)})
    started = time.perf_counter()
    anyio.run(run_job, cfg, SumBench())
    print(json.dumps({"wall_s": time.perf_counter() - started,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


class Endpoint:
    """A simulated endpoint process stand-in that can be stopped and started again on its port."""

    def __init__(self, faults: FaultPlan | None, pad: int):
        self.faults, self.pad, self.logs = faults, pad, []
        self.server = SimServer(policy(), faults=faults, pad_bytes=pad).start()
        self.port, self.url = self.server.port, self.server.base_url

    def outage(self, seconds: float) -> None:
        self.server.stop()
        self.logs.append(self.server.log)
        time.sleep(seconds)
        self.server = SimServer(policy(), faults=self.faults, pad_bytes=self.pad, port=self.port).start()

    def entries(self) -> list[dict[str, Any]]:
        return [e for log in self.logs for e in log] + self.server.log


def run_job_process(args: argparse.Namespace, out: Path, faulty: bool, cell: str = CELL) -> dict[str, Any]:
    burst = [ScheduledFault(kind="http_429", nth=n) for n in range(400, 520)]  # a burst of 120 in a row
    plans = (FaultPlan(rates=MIX, seed=5, retry_after_s=0.5), FaultPlan(rates=MIX, schedule=burst, seed=6,
                                                                       retry_after_s=0.5)) if faulty else (None, None)
    endpoints = [Endpoint(plan, args.pad_bytes) for plan in plans]
    watcher = None
    if faulty:
        def outage_mid_optimization() -> None:
            while len(endpoints[0].server.log) < args.outage_after:
                time.sleep(0.05)
            endpoints[0].outage(args.outage_s)

        watcher = threading.Thread(target=outage_mid_optimization, daemon=True)
        watcher.start()
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--cell", cell, "--out", str(out), "--budget",
           str(args.budget),
           "--concurrency", str(args.concurrency), "--endpoints", ",".join(e.url for e in endpoints)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if watcher is not None:
        watcher.join()
    entries = [e for ep in endpoints for e in ep.entries()]
    for ep in endpoints:
        ep.server.stop()
    if proc.returncode != 0:
        raise SystemExit(f"job failed (rc {proc.returncode}): {proc.stderr[-3000:]}")
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    return {**figures, **card_figures(out), "answered_keys": len({e["key"] for e in entries if e["status"] == 200
                                                                   and not e["fault"] and e["row_id"]}),
            "received": len(entries)}


def card_figures(out: Path) -> dict[str, Any]:
    conn = sqlite3.connect(str(out / "card.sqlite"))
    try:
        summaries = [json.loads(v) for (v,) in conn.execute(
            "SELECT new_value FROM mutations WHERE mutation_type='pool.summary' ORDER BY sequence")]
        rollouts = conn.execute("SELECT COUNT(*) FROM rollouts").fetchone()[0]
        waits = conn.execute("SELECT mutation_type, COUNT(*) FROM mutations WHERE actor='engine:endpoint_pool' "
                             "GROUP BY mutation_type").fetchall()
    finally:
        conn.close()
    sent = sum(e["sent"] for s in summaries for e in s["endpoints"])
    disk = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return {"sent": sent, "rollouts": rollouts, "disk_bytes": disk, "waits": dict(waits),
            "result": json.loads((out / "result.json").read_text())}


def same(a: dict[str, Any], b: dict[str, Any], ignore_attempts: bool) -> bool:
    def clean(r: dict[str, Any]) -> dict[str, Any]:
        r = json.loads(json.dumps(r))
        r["optimization"].pop("elapsed_seconds", None)
        if ignore_attempts:
            for key in ("attempted", "infrastructure_failures", "retries"):
                r["optimization"]["budget"].pop(key, None)
            r["selection"].pop("selection_id", None)
        return r

    return clean(a) == clean(b)


def report_single(args: argparse.Namespace, run: dict[str, Any], out: Path) -> None:
    """Memory of one GEPA job with large responses: peak RSS, and store bytes per response byte (issue W item 7)."""
    store = sum(p.stat().st_size for p in out.glob("card.sqlite*"))
    response_bytes = run["answered_keys"] * args.pad_bytes
    print(f"single GEPA job ({SINGLE}, budget {args.budget}, {args.pad_bytes} B responses, concurrency "
          f"{args.concurrency}): peak RSS {run['peak_rss_mb']:.0f} MB (target < 300); store {store / 1e6:.0f} MB for "
          f"{run['answered_keys']} answered requests = {store / max(1, response_bytes):.2f}x the response bytes "
          f"(target <= 1.2)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--budget", type=int, default=600)
    p.add_argument("--pad-bytes", type=int, default=1_000_000)
    p.add_argument("--outage-s", type=float, default=20.0)
    p.add_argument("--outage-after", type=int, default=600, help="requests endpoint A has served before its outage")
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--cell", default=CELL, help=argparse.SUPPRESS)
    p.add_argument("--single-only", action="store_true", help="only the single-agent GEPA job (memory figures)")
    p.add_argument("--out", help=argparse.SUPPRESS)
    p.add_argument("--endpoints", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args)
        return
    with tempfile.TemporaryDirectory(prefix="endurance-") as tmp:
        single = run_job_process(args, Path(tmp) / "single", faulty=False, cell=SINGLE)
        report_single(args, single, Path(tmp) / "single")
        if args.single_only:
            return
        clean = run_job_process(args, Path(tmp) / "clean", faulty=False)
        faulty = run_job_process(args, Path(tmp) / "faulty", faulty=True)
    response_bytes = faulty["answered_keys"] * args.pad_bytes / max(1, faulty["rollouts"])
    print(f"job: GEPA budget {args.budget}, {CELL}, 2 simulated endpoints, {args.pad_bytes} B responses, "
          f"concurrency {args.concurrency}")
    print(f"same result.json as fault-free: exact={same(clean['result'], faulty['result'], False)} "
          f"apart-from-attempt-counters={same(clean['result'], faulty['result'], True)}")
    print(f"wall: fault-free {clean['wall_s']:.1f} s, faulty {faulty['wall_s']:.1f} s -> "
          f"{faulty['wall_s'] / clean['wall_s']:.2f}x; vs fault-free + outage "
          f"{faulty['wall_s'] / (clean['wall_s'] + args.outage_s):.2f}x (target <= 1.3)")
    print(f"requests sent: fault-free {clean['sent']}, faulty {faulty['sent']}; wasted {faulty['sent'] - clean['sent']}"
          f" ({(faulty['sent'] - clean['sent']) / clean['sent']:.1%}); received by the endpoints {faulty['received']}")
    print(f"pool waits in the card: {faulty['waits']}")
    print(f"peak RSS: fault-free {clean['peak_rss_mb']:.0f} MB, faulty {faulty['peak_rss_mb']:.0f} MB (target < 300)")
    print(f"disk: {faulty['disk_bytes'] / faulty['rollouts'] / 1e6:.2f} MB per rollout over {faulty['rollouts']} "
          f"rollouts; response bytes {response_bytes / 1e6:.2f} MB per rollout -> "
          f"{faulty['disk_bytes'] / faulty['rollouts'] / response_bytes:.2f}x (target <= 1.2)")


if __name__ == "__main__":
    main()
