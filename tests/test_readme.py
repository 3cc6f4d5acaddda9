"""The README's commands run: the set-up test command is this suite; the main job and the other commands are
executed here against the simulated endpoint."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", README, re.DOTALL)


def commands() -> list[str]:
    out = []
    for block in blocks():
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("  #")[0].strip()
            if line:
                out.append(line)
    return out


def test_setup_is_two_commands_install_then_test():
    setup = [c for c in blocks()[0].splitlines() if c.strip()]
    assert len(setup) == 2
    assert "pip install" in setup[0] and setup[1] == "python -m pytest -q"
    ci = (ROOT / ".ci" / "run").read_text()
    assert setup[0].replace("python -m pip install", "python -m pip install --quiet") in ci
    assert setup[1] in ci


def test_readme_job_and_other_commands_run(tmp_path):
    cmds = [c for c in commands() if c.startswith("python -m engine")]
    job = next(c for c in cmds if " job " in c and "--task-endpoint" not in c)
    argv = shlex.split(job)[1:]
    argv[argv.index("--out") + 1] = str(tmp_path / "demo")
    proc = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "SIMULATED ENDPOINT" in proc.stderr
    line = json.loads(proc.stdout.strip())
    assert line["status"] == "completed" and line["endpoint_kind"] == "simulated"
    assert (tmp_path / "demo" / "card.sqlite").exists()

    run_cmd = next(c for c in cmds if c.startswith("python -m engine run"))
    argv = shlex.split(run_cmd)[1:]
    argv[argv.index("--out") + 1] = str(tmp_path / "pred.jsonl")
    proc = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert len((tmp_path / "pred.jsonl").read_text().splitlines()) == 1
