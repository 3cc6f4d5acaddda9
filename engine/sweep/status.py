"""`python -m engine sweep status`: the jobs of a sweep directory, live (engine/sweep/live.py).

One line per job (status, tries, job, progress, result / error), the counts by status and the sweep's totals
(rollouts done / planned, rate, ETA). A running job's progress is its phase, that phase's done / total, failures by
kind, rate and ETA, and the age of its heartbeat; a `stale` job (its driver gone) shows the last progress it
recorded. `--watch [SECONDS]` redraws until the sweep ends (Ctrl-C exits 0); `--html OUT` writes the same as a
self-contained page (written atomically; with --watch rewritten at each refresh, and it reloads itself every
SECONDS when served, e.g. by `python -m http.server`); `--json` one document.
"""

from __future__ import annotations

import html
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from core.errors import UsageError
from engine.args import StrictParser, positive_float
from engine.sweep.live import SweepView, read_sweep
from engine.sweep.remaining import JobView

COUNT_ORDER = ("pending", "running", "stale", "finished", "degraded", "failed", "not_implemented")


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def progress_text(j: JobView, now: float) -> str:
    snap = j.progress.snapshot if j.progress is not None else None
    if j.shown in ("running", "stale"):
        if snap is None:
            text = "starting"
        else:
            fails = ",".join(f"{k}={n}" for k, n in sorted(snap["failures"].items())) or "none"
            rate = f"{snap['rate']}/s" if snap["rate"] is not None else "-/s"
            text = (f"{snap['phase']} {snap['done']}/{snap['total']} failures {fails} {rate} "
                    f"eta {duration(snap['eta'])}")
        if j.progress is not None:
            text += f" | beat {duration(now - j.progress.heartbeat)} ago"
        return text
    if snap is not None:
        return f"{snap['rollouts']} rollouts"
    return "-"


def result_text(j: JobView) -> str:
    r = j.row
    tail = (f"delta_pp={r.result.get('delta_pp')} base={r.result.get('baseline_mean')} "
            f"deployed={r.result.get('deployed_mean')}" if r.result else (r.error or r.reason or ""))
    if r.status == "degraded":  # why: the infrastructure failures a heal round will re-run
        tail = f"{r.error} | {tail}"
    return tail


def totals_text(view: SweepView) -> str:
    share = f" ({100 * view.done / view.planned:.0f}%)" if view.planned else ""
    rate = f"{view.rate}/s" if view.rate is not None else "-"
    if view.eta is not None:
        eta = duration(view.eta)
    else:
        eta = "- (nothing running" + (f"; {view.counts['stale']} stale: `sweep run` resumes them)"
                                     if view.counts["stale"] else ")") if view.ended else "-"
    return f"rollouts {view.done}/{view.planned}{share}  rate {rate}  eta {eta}"


def render_text(view: SweepView) -> str:
    lines = [f"{'status':<16}{'tries':>5}  {'job':<58} {'progress':<48} result / error"]
    for j in view.jobs:
        lines.append(f"{j.shown:<16}{j.row.attempts:>5}  {j.row.key:<58} {progress_text(j, view.now):<48} "
                     f"{result_text(j)[:160]}")
    lines.append("  ".join(f"{k}={view.counts[k]}" for k in COUNT_ORDER))
    lines.append(totals_text(view))
    return "\n".join(lines)


def render_html(view: SweepView, refresh: float) -> str:
    """A self-contained page (no script, no external resource); figures carry data- attributes for tools."""
    e = html.escape
    rows = "\n".join(
        f'<tr class="{e(j.shown)}" data-key="{e(j.row.key)}" data-status="{e(j.shown)}" data-done="{j.done}" '
        f'data-planned="{j.planned if j.planned is not None else ""}"><td>{e(j.shown)}</td><td>{j.row.attempts}</td>'
        f"<td>{e(j.row.key)}</td><td>{e(progress_text(j, view.now))}</td><td>{e(result_text(j)[:300])}</td></tr>"
        for j in view.jobs)
    counts = " ".join(f'<span class="count" data-status="{k}">{k}={view.counts[k]}</span>' for k in COUNT_ORDER)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(view.now))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="refresh" content="{max(1, int(round(refresh)))}">
<title>sweep status</title>
<style>
body{{font-family:sans-serif;margin:1.5em}} table{{border-collapse:collapse;font-size:13px}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:left}} tr.stale{{background:#fde2e2}}
tr.running{{background:#e2f0fd}} tr.finished{{background:#e6f6e6}} tr.failed,tr.degraded{{background:#fff3cd}}
.count{{margin-right:1em}}
</style></head><body>
<h1>sweep status</h1>
<p id="updated">updated {e(stamp)}{" (ended)" if view.ended else ""}</p>
<p id="counts">{counts}</p>
<p id="totals" data-done="{view.done}" data-planned="{view.planned}" data-rate="{view.rate if view.rate is not None else ''}"
 data-eta="{view.eta if view.eta is not None else ''}">{e(totals_text(view))}</p>
<table id="jobs"><thead><tr><th>status</th><th>tries</th><th>job</th><th>progress</th><th>result / error</th></tr>
</thead><tbody>
{rows}
</tbody></table></body></html>
"""


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def show(sweep_dir: Path, args: object, tty: bool) -> SweepView:
    view = read_sweep(sweep_dir)
    refresh = getattr(args, "watch", None) or 5.0
    if getattr(args, "html", None):
        write_atomic(Path(getattr(args, "html")), render_html(view, refresh))
    if getattr(args, "json", False):
        print(json.dumps(view.to_json(), sort_keys=True), flush=True)
    else:
        print(("\x1b[H\x1b[2J" if tty and getattr(args, "watch", None) else "") + render_text(view), flush=True)
    return view


def status_main(argv: Sequence[str]) -> int:
    p = StrictParser(prog="engine sweep status", description="Summarize a sweep directory's sweep.sqlite: jobs, "
                     "live progress of running jobs (stale when their driver is gone), totals and ETA.")
    p.add_argument("--sweep-dir", required=True)
    p.add_argument("--json", action="store_true")
    p.add_argument("--watch", nargs="?", const=2.0, default=None, type=positive_float("--watch"), metavar="SECONDS",
                   help="redraw every SECONDS (default 2) until the sweep ends; Ctrl-C exits")
    p.add_argument("--html", default=None, metavar="OUT", help="also write a self-contained HTML page to OUT "
                   "(reloads itself every --watch SECONDS, default 5, when served)")
    args = p.parse_args(list(argv))
    sweep_dir = Path(args.sweep_dir)
    if not (sweep_dir / "sweep.sqlite").is_file():
        raise UsageError(f"{args.sweep_dir} holds no sweep (no sweep.sqlite)")
    tty = sys.stdout.isatty()
    try:
        view = show(sweep_dir, args, tty)
        while args.watch is not None and not view.ended:
            time.sleep(args.watch)
            view = show(sweep_dir, args, tty)
    except KeyboardInterrupt:
        return 0
    return 0
