"""bench/frameworks.py stays runnable and measures what it claims: a `--tiny` run prints every figure for every
runtime of every workload, each runtime made model calls through the endpoint pool and every row ended usable.
(Its pool wrapper once took one argument where `EndpointPool.chat` takes two: every framework call failed and the
figures were those of failures, `calls 0`.) Nothing here asserts a time."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from engine.runtimes import missing_extra

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = {"sequential": ("native", "langgraph", "crewai"), "centralized": ("native", "langgraph", "autogen"),
             "decentralized": ("native", "langgraph", "openai_agents")}
FIGURE = re.compile(r"^  (?P<runtime>\w+)\s+engine CPU/call\s+(?P<cpu>[\d.]+) ms \(\s*[\d.]+x native\)\s+"
                    r"wall\s+(?P<wall>[\d.]+) s \([\d.]+x native\)\s+calls\s+(?P<calls>\d+)\s+"
                    r"in flight\s+(?P<flight>[\d.]+)\s+gateway own/call (?P<gateway>[\d.]+|-) ms\s+"
                    r"usable (?P<usable>\d+)/(?P<rows>\d+)\s+scored 1: (?P<scored>[\d.]+)$")


def test_a_tiny_run_prints_every_figure_for_every_runtime():
    proc = subprocess.run([sys.executable, "bench/frameworks.py", "--tiny"], cwd=ROOT, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sections = {}
    current = None
    for text in proc.stdout.splitlines():
        head = re.match(r"^(\w+): (\d+) BFCL rows", text)
        if head:
            current = sections.setdefault(head.group(1), {})
            rows = int(head.group(2))
            continue
        figure = FIGURE.match(text)
        if figure:
            assert current is not None
            current[figure.group("runtime")] = figure
        elif text.strip():
            assert current is not None and "skipped:" in text, text
    assert set(sections) == set(WORKLOADS)
    for workload, runtimes in WORKLOADS.items():
        expected = [r for r in runtimes if missing_extra(r) is None]
        assert list(sections[workload]) == expected, (workload, proc.stdout)
        for runtime, figure in sections[workload].items():
            assert int(figure.group("calls")) > 0, (workload, runtime)
            assert int(figure.group("usable")) == int(figure.group("rows")) == rows, (workload, runtime)
            assert float(figure.group("cpu")) > 0 and float(figure.group("flight")) > 0
            assert (figure.group("gateway") == "-") == (runtime == "native")


def test_bad_input_is_one_line_and_exit_2():
    proc = subprocess.run([sys.executable, "bench/frameworks.py", "--runtimes", "nosuch"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "nosuch" in proc.stderr and not proc.stdout
