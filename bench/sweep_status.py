"""How good is `sweep status`'s ETA? A sweep on the built-in simulated endpoint, watched from outside.

Runs `python -m engine sweep run --simulated --sim-delay-ms D` in a subprocess, reads the sweep directory the way
`sweep status` does (engine.sweep.live.read_sweep) every --poll seconds, and when the sweep has ended prints, at
a few moments (by share of the wall time), the ETA shown then, the real remaining time (end - then) and their
ratio, plus the rollouts done / planned shown then. Figures only, no asserts.

usage: python bench/sweep_status.py [--delay-ms 50] [--limit 4] [--budget 120] [--seeds 0,1,2]

The default budget makes a sweep of about 1.5 minutes: at budget 40 it is over in 45 s and its 10% mark falls
inside the driver's start-up (imports, endpoint checks, stores opened), which no real sweep of hours has.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.sweep.live import read_sweep  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--delay-ms", type=float, default=50.0)
    p.add_argument("--limit", type=int, default=4)
    p.add_argument("--budget", type=int, default=120)
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--poll", type=float, default=0.5)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sw = Path(tmp) / "sw"
        cmd = [sys.executable, "-m", "engine", "sweep", "run", "--sweep-dir", str(sw), "--runtime", "native",
               "--tasks", "bfcl", "--table", "3", "--methods", "gepa,identity", "--topologies", "single,independent",
               "--seeds", args.seeds, "--budget", str(args.budget), "--allow-small-budget", "--simulated",
               "--sim-delay-ms", str(args.delay_ms), "--limit", str(args.limit), "--no-aggregate", "--quiet"]
        start = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})
        samples: list[tuple[float, float | None, int, int, int]] = []
        while proc.poll() is None:
            time.sleep(args.poll)
            if (sw / "sweep.sqlite").exists():
                try:
                    view = read_sweep(sw)
                except Exception:  # the driver is creating it
                    continue
                samples.append((time.monotonic() - start, view.eta, view.done, view.planned, view.counts["running"]))
        end = time.monotonic() - start
        if proc.returncode != 0:
            print(f"sweep exited {proc.returncode}: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}")
            return 1
    print(f"sweep: gepa+identity on bfcl single/independent, seeds {args.seeds}, budget {args.budget}, simulated "
          f"endpoint {args.delay_ms:g} ms/call, limit {args.limit}; wall {end:.1f}s, {len(samples)} polls")
    print(f"{'at':>6} {'share':>6} {'done/planned':>14} {'running':>7} {'eta shown':>10} {'real left':>10} "
          f"{'eta/real':>9}")
    with_eta = [s for s in samples if s[1] is not None]
    for share in (0.1, 0.25, 0.5, 0.75, 0.9):
        at = share * end
        near = min(with_eta, key=lambda s: abs(s[0] - at), default=None)
        if near is None:
            continue
        t, eta, done, planned, running = near
        real = end - t
        ratio = f"{eta / real:.2f}" if eta is not None and real > 0 else "-"
        print(f"{t:6.1f} {t / end:6.2f} {f'{done}/{planned}':>14} {running:>7} {eta:>9.1f}s {real:>9.1f}s "
              f"{ratio:>9}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
