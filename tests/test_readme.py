"""The README's and the docs' commands run as typed, and what they say about the house is true.

Every command of the ```bash blocks of README.md and docs/*.md is taken from their text and run here, in a scratch directory
that stands for the checkout (its `examples/` is a link to the repository's, so `runs/` is not the repository's),
against the simulated endpoint. Two things differ from a terminal, both stated where they happen: `python` is this
interpreter (in an activated venv that is what `python` is), and `serve-sim`'s port 8000 becomes a free port (read
back from its first stdout line) with the gateway's `--task-endpoint` pointed at it, since 8000 may be taken on a
shared machine. Commands that cannot run here are listed in NOT_RUN_HERE with the reason;
test_every_readme_command_is_run_here_or_says_why_not keeps that list and the runners below complete.
The README's map, command table and reference list are checked against the tree (every directory, engine wing,
command and docs page named; every relative link resolves).

The set-up block (install, then this suite) is run by CI in a fresh venv (`.ci/run` reads both commands from the
README) and by the opt-in tests/test_venv_setup.py (MPB_VENV_TEST=1).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = {path: path.read_text(encoding="utf-8") for path in sorted((ROOT / "docs").glob("*.md"))}

# README commands that need what this machine has not, each with the reason
NOT_RUN_HERE = {
    "--task-endpoint http://gpu0:8000/v1": "needs real vLLM servers on GPUs (gpu0, gpu1) serving Qwen/Qwen3.5-9B",
    'python -m pytest -m "not slow"': "the suite's own fast loop: run from inside the suite it would recurse (the "
                                      "full suite, which CI runs, holds every test it selects); "
                                      "test_the_fast_loop_selects_the_unit_tests_and_leaves_out_the_slow_ones "
                                      "collects what it selects",
    "MPB_LIVE=1 python -m pytest tests/live": "needs llama-cpp-python and the SmolLM2-135M weights (opt-in; "
                                              "tests/live/test_llama_cpp_endpoint.py says how to install them)",
}
# extras of pyproject.toml that the install line may leave out, each with the reason
NOT_INSTALLED = {"apibank": "sentence-transformers pulls a torch of several GB; no README command needs it (the "
                 "API-Bank ToolSearcher scorer refuses without it, in one line naming the extra)"}


def blocks() -> list[str]:
    """The ```bash blocks of the README (the set-up block first), then of each docs page."""
    return [block for text in (README, *DOCS.values()) for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL)]


def commands(text: str | None = None) -> list[str]:
    out = []
    for block in blocks() if text is None else [text]:
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("  #")[0].strip()
            if line:
                out.append(line)
    return out


def setup_commands() -> list[str]:
    return commands(re.findall(r"```bash\n(.*?)```", README, re.DOTALL)[0])


def install_command() -> str:
    """The README's install command, exactly as written (tests/test_venv_setup.py runs it)."""
    return setup_commands()[0]


def engine_commands() -> list[str]:
    return [c for c in commands() if c.startswith("python -m engine")
            and not any(marker in c for marker in NOT_RUN_HERE)]


def one(prefix: str) -> str:
    """The README's first command starting with `prefix` (a second one fails the accounting test below until a test
    runs it too)."""
    found = [c for c in engine_commands() if c.startswith(prefix)]
    assert found, prefix
    return found[0]


# the prefixes of the commands the tests below run, by test
RUN_HERE = {
    "test_readme_job_run_aggregate_and_card_commands": ("python -m engine job ", "python -m engine run ",
                                                        "python -m engine aggregate ", "python -m engine card export ",
                                                        "python -m engine card view "),
    "test_readme_sweep_commands": ("python -m engine sweep plan ", "python -m engine sweep run ",
                                   "python -m engine sweep status "),
    "test_readme_sandbox_serve_sim_and_gateway_commands": ("python -m engine sandbox check",
                                                           "python -m engine sandbox run ",
                                                           "python -m engine serve-sim ", "python -m engine gateway "),
}


def typed(command: str) -> list[str]:
    """The command's argv as a shell splits it, `python` being this interpreter."""
    return [sys.executable if arg == "python" else arg for arg in shlex.split(command)]


def scratch(tmp_path: Path) -> Path:
    (tmp_path / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    return tmp_path


def run(argv: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=timeout)


def test_setup_is_two_commands_install_then_test_and_ci_runs_them_in_a_fresh_venv():
    setup = setup_commands()
    assert len(setup) == 2
    assert "pip install" in setup[0] and setup[1] == "python -m pytest -q"
    printed = subprocess.run(["bash", str(ROOT / ".ci" / "run"), "--print-commands"], capture_output=True, text=True,
                             timeout=60, check=True).stdout.splitlines()
    assert printed == setup  # CI reads them from the README, not a copy
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r'^python -m venv "\$scratch/venv"$', ci, re.M) and '. "$scratch/venv/bin/activate"' in ci
    assert ci.index("activate") < ci.index('eval "$install"') < ci.index('eval "$test_cmd"')


def test_the_install_line_brings_every_extra_a_readme_command_needs():
    extras = set(re.search(r"-e '\.\[([^\]]*)\]'", install_command()).group(1).split(","))  # type: ignore[union-attr]
    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    assert "plot" in extras  # `aggregate --plot`
    assert declared - extras == set(NOT_INSTALLED), declared - extras
    assert extras <= declared


def test_every_readme_command_is_run_here_or_says_why_not():
    run_here = [p for prefixes in RUN_HERE.values() for p in prefixes]
    assert len({one(p) for p in run_here}) == len(run_here)  # each prefix names its own command
    for command in commands():
        if command in setup_commands():
            continue
        if any(m in command for m in NOT_RUN_HERE):
            assert command not in engine_commands()
            continue
        assert command in {one(p) for p in run_here}, \
            f"README command neither run by tests/test_readme.py nor in NOT_RUN_HERE: {command}"
    for marker in NOT_RUN_HERE:  # each skip still names a README command
        assert any(marker in c for c in commands()), marker
    for name in RUN_HERE:
        assert callable(globals()[name])


@pytest.mark.slow  # end to end, in subprocesses
def test_readme_job_run_aggregate_and_card_commands(tmp_path):
    here = scratch(tmp_path)
    proc = run(typed(one("python -m engine job ")), here)
    assert proc.returncode == 0, proc.stderr
    assert "SIMULATED ENDPOINT" in proc.stderr
    line = json.loads(proc.stdout.strip())
    assert line["status"] == "completed" and line["endpoint_kind"] == "simulated"
    assert (here / "runs" / "demo" / "card.sqlite").exists()

    proc = run(typed(one("python -m engine run ")), here)
    assert proc.returncode == 0, proc.stderr
    assert len((here / "runs" / "pred.jsonl").read_text().splitlines()) == 1

    aggregate = typed(one("python -m engine aggregate "))
    assert "--include-nonconformant" in aggregate  # without it the simulated demo is skipped, exit 1, reason named
    bare = run([a for a in aggregate if a != "--include-nonconformant"], here)
    assert bare.returncode == 1 and "demo" in bare.stderr and "conformant" in bare.stderr, bare.stderr
    proc = run(aggregate, here)
    assert proc.returncode == 0 and "identity\tbfcl\tsingle" in proc.stdout, proc.stderr
    assert json.loads((here / "summary.json").read_text())["cells"][0]["status"] == "incomplete"

    proc = run(typed(one("python -m engine card export ")), here)
    assert proc.returncode == 0, proc.stderr
    valid = run([sys.executable, "-m", "engine", "card", "validate", "runs/demo-card"], here)
    assert valid.returncode == 0, valid.stdout + valid.stderr
    proc = run(typed(one("python -m engine card view ")), here)
    assert proc.returncode == 0, proc.stderr
    assert "<html" in (here / "runs" / "demo-view" / "index.html").read_text().lower()


@pytest.mark.slow  # end to end, in subprocesses
def test_readme_sweep_commands(tmp_path):
    here = scratch(tmp_path)
    plan = run(typed(one("python -m engine sweep plan ")), here)
    assert plan.returncode == 0, plan.stderr
    assert "gepa" in plan.stdout and "identity" in plan.stdout
    assert not (here / "runs").exists()  # plan runs nothing
    proc = run(typed(one("python -m engine sweep run ")), here, timeout=280)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (here / "runs" / "sweep-demo" / "sweep.sqlite").exists() and (here / "runs" / "sweep-demo" /
                                                                         "summary.json").exists()
    status = run(typed(one("python -m engine sweep status ")), here)
    assert status.returncode == 0, status.stderr
    assert "finished" in status.stdout and "failed=0" in status.stdout, status.stdout


@pytest.mark.slow  # end to end, in subprocesses
def test_readme_sandbox_serve_sim_and_gateway_commands(tmp_path):
    here = scratch(tmp_path)
    check = run(typed(one("python -m engine sandbox check")), here)
    if "jail: available" not in check.stdout:
        pytest.skip(f"no jail on this machine, so `sandbox run` would refuse: {check.stdout.strip()}")
    assert check.returncode == 0, check.stdout + check.stderr
    # `sandbox run prog.py --stdin in.txt`: the user's program and input, written here
    (here / "prog.py").write_text("a, b = map(int, input().split())\nprint(a + b)\n")
    (here / "in.txt").write_text("20 22\n")
    proc = run(typed(one("python -m engine sandbox run ")), here)
    assert proc.returncode == 0, proc.stderr
    outcome = json.loads(proc.stdout.strip())
    assert outcome["isolation"]["kind"] == "bwrap" and outcome["exit_code"] == 0
    assert outcome["stdout_head"].strip() == "42", outcome

    serve = typed(one("python -m engine serve-sim "))
    serve[serve.index("--port") + 1] = "0"  # 8000 may be taken here: a free port, read back below
    server = subprocess.Popen(serve, cwd=here, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()  # type: ignore[union-attr]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        gateway = typed(one("python -m engine gateway "))
        assert gateway[gateway.index("--task-endpoint") + 1] == "http://127.0.0.1:8000/v1"
        gateway[gateway.index("--task-endpoint") + 1] = url
        assert gateway[gateway.index("--") + 1:] == [sys.executable, "examples/my_agents.py"]  # the shipped example
        proc = run(gateway, here, timeout=120)
        assert proc.returncode == 0 and "2 model calls sent, 0 replayed" in proc.stderr, proc.stderr
        assert "planner:" in proc.stdout and "solver:" in proc.stdout, proc.stdout
        assert (here / "runs" / "mine" / "card.sqlite").exists()
        again = run(gateway, here, timeout=120)  # the same command into the same --out replays every call
        assert again.returncode == 0 and "0 model calls sent, 2 replayed" in again.stderr, again.stderr
    finally:
        server.terminate()
        server.communicate(timeout=30)  # reaps it and closes both pipes


# ------------------------------------------------------------------ what the README says about the house is true

LINK = re.compile(r"\]\(([^)\s]+)\)")
NOT_IN_THE_MAP = {"runs", "build", "dist"}  # job outputs and build products (git-ignored)


def section(title: str) -> str:
    """The README's `## title` section, up to the next `## ` heading."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.M | re.S)
    assert match, f"README has no '## {title}' section"
    return match.group(1)


def anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
            for heading in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def test_the_map_names_every_top_level_directory_and_every_engine_wing():
    the_map = section("The map")
    tops = sorted(p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
                  and p.name not in NOT_IN_THE_MAP and not p.name.endswith(".egg-info"))
    wings = sorted(p.parent.name for p in (ROOT / "engine").glob("*/__init__.py"))
    assert {"core", "engine", "tests", "docs"} <= set(tops) and {"gateway", "sweep", "job"} <= set(wings)
    missing = [f"{top}/" for top in tops if f"`{top}/`" not in the_map]
    missing += [f"engine/{wing}/" for wing in wings if f"`engine/{wing}/`" not in the_map]
    assert missing == [], f"README's map does not name {missing}"


def test_the_architecture_page_names_every_engine_module_and_wing():
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    modules = sorted(p.name for p in (ROOT / "engine").glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    wings = sorted(p.parent.name for p in (ROOT / "engine").glob("*/__init__.py"))
    missing = [m for m in modules if f"`{m}`" not in page and f"`engine/{m}`" not in page]
    missing += [f"engine/{w}/" for w in wings if f"`engine/{w}/`" not in page]
    assert missing == [], f"docs/architecture.md does not name {missing}"


def test_the_command_table_has_one_line_per_command():
    from engine.cli.main import COMMANDS

    rows = re.findall(r"^\| `python -m engine ([a-z-]+)` \|", section("Commands"), re.M)
    assert sorted(rows) == sorted(COMMANDS)


def test_every_docs_page_is_linked_from_the_readme_and_every_link_resolves():
    broken = []
    for path, text in [(ROOT / "README.md", README), *DOCS.items()]:
        for target in LINK.findall(text):
            if "://" in target:
                continue
            name, _, anchor = target.partition("#")
            dest = (path.parent / name).resolve() if name else path
            if not dest.exists():
                broken.append(f"{path.name}: {target} (no such file)")
            elif anchor and anchor not in anchors(dest.read_text(encoding="utf-8")):
                broken.append(f"{path.name}: {target} (no such heading)")
    assert broken == []
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in LINK.findall(section("Reference"))}
    assert sorted(p.name for p in DOCS if p.resolve() not in linked) == []


def test_the_fast_loop_uses_the_declared_slow_marker():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    assert any(m.startswith("slow:") for m in declared)
    assert 'python -m pytest -m "not slow"' in commands(re.findall(r"```bash\n(.*?)```", section("Tests"),
                                                                   re.DOTALL)[0])


@pytest.mark.slow
def test_the_fast_loop_selects_the_unit_tests_and_leaves_out_the_slow_ones():
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "not slow", "tests"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    selected = [line for line in proc.stdout.splitlines() if "::" in line]
    counts = re.search(r"(\d+)/(\d+) tests collected \((\d+) deselected\)", proc.stdout)
    assert counts, proc.stdout[-500:]
    assert int(counts.group(3)) > 0 and len(selected) == int(counts.group(1))  # some are slow, the rest run
    for package in ("core", "optimizers", "topologies", "benchmarks", "engine"):
        assert any(line.startswith(f"tests/{package}/") for line in selected), package
    assert not any(line.startswith("tests/test_readme.py::test_readme_") for line in selected)  # end to end: slow
