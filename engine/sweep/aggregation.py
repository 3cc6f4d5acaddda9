"""The sweep's last step: the paired summary over its finished jobs (engine/aggregate), called as functions, as
`python -m engine aggregate SWEEP_DIR/runs --out SWEEP_DIR/summary.json` would: the table to stdout,
summary.json into the sweep directory, one stderr line per skipped result."""

from __future__ import annotations

import sys
from pathlib import Path

from engine.aggregate.cli import write_json_atomic
from engine.aggregate.discovery import find_results, load_results
from engine.aggregate.summary import aggregate
from engine.aggregate.tables import format_table


def aggregate_sweep(sweep_dir: Path, include_nonconformant: bool) -> bool:
    """Aggregate SWEEP_DIR/runs into SWEEP_DIR/summary.json; False (with a line saying why) when no result.json
    was usable."""
    runs = sweep_dir / "runs"
    paths = find_results([runs])
    results, skipped = load_results(paths, roots=[runs], include_nonconformant=include_nonconformant)
    for item in skipped:
        print(f"aggregate: warning: skipped {item.path}: {item.reason}", file=sys.stderr)
    if not results:
        print(f"sweep: nothing to aggregate: no usable job results ({len(skipped)} result.json file(s) skipped); "
              f"the jobs' results are in {runs}", file=sys.stderr)
        return False
    summary = aggregate(results, skipped=skipped)
    print(format_table(summary), flush=True)
    write_json_atomic(sweep_dir / "summary.json", summary)
    return True
