"""bench/routing.py stays runnable: `--tiny` runs the multi-turn jobs under both routings on 4 simulated endpoints
and prints every figure (prefill computed and cached per routing, the reduction, in-flight / limit per routing,
whether the results are identical). Nothing here asserts a time or a reduction: tiny runs only keep it short."""

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_bench_routing_tiny_prints_every_figure():
    proc = subprocess.run([sys.executable, "bench/routing.py", "--tiny"], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    figures = json.loads(out[:out.rindex("}") + 1])
    for routing in ("least-loaded", "cache-aware"):
        got = figures[routing]
        assert got["prefill_tokens_computed"] > 0 and got["prefill_tokens_cached"] >= 0
        assert got["prefill_tokens_computed"] + got["prefill_tokens_cached"] == got["prompt_tokens"]
        assert len(got["mean_inflight_over_limit_per_endpoint"]) == 4 and 0 < got["mean_inflight_over_limit"] <= 1
    assert set(figures["cache-aware"]["choices"]) == {"affinity", "placed", "fallback"}
    assert figures["results_identical"] is True  # routing never changes a result
    assert re.search(r"prefill tokens computed: least-loaded \d+, cache-aware \d+: -?\d+\.\d% fewer "
                     r"\(target >= 40%\)", out)
    assert re.search(r"mean in-flight / limit: least-loaded [\d.]+, cache-aware [\d.]+ \(target >= 0\.90\)", out)
    assert "results identical (result.json, selection.json, every rollout's score): True" in out
