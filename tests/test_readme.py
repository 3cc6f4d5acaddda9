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


def test_readme_other_commands_run(tmp_path):
    cmds = [c for c in commands() if c.startswith("python -m engine")]
    demo = tmp_path / "runs" / "demo"
    job = next(c for c in cmds if " job " in c and "--task-endpoint" not in c)
    argv = shlex.split(job)[1:]
    argv[argv.index("--out") + 1] = str(demo)
    assert subprocess.run([sys.executable, *argv, "--quiet"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300).returncode == 0

    card = next(c for c in cmds if c.startswith("python -m engine card export"))
    argv = [a.replace("runs/", f"{tmp_path}/runs/") for a in shlex.split(card)[1:]]
    proc = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    valid = subprocess.run([sys.executable, "-m", "engine", "card", "validate", str(tmp_path / "runs" / "demo-card")],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert valid.returncode == 0, valid.stdout + valid.stderr

    agg = next(c for c in cmds if c.startswith("python -m engine aggregate"))
    argv = [a.replace("runs/", f"{tmp_path}/runs/").replace("summary.json", str(tmp_path / "summary.json"))
            for a in shlex.split(agg)[1:]]
    proc = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=300)
    # the demo job ran on the simulated endpoint, so it is non-conformant and skipped, with the reason named
    assert proc.returncode == 1 and "demo" in proc.stderr and "conformant" in proc.stderr
    proc = subprocess.run([sys.executable, *argv, "--include-nonconformant"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and "identity\tbfcl\tsingle" in proc.stdout
    assert json.loads((tmp_path / "summary.json").read_text())["cells"][0]["status"] == "incomplete"

    serve = next(c for c in cmds if c.startswith("python -m engine serve-sim"))
    argv = shlex.split(serve)[1:]
    argv[argv.index("--port") + 1] = "0"
    server = subprocess.Popen([sys.executable, *argv], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        url = server.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        import urllib.request

        with urllib.request.urlopen(url + "/models", timeout=10) as resp:
            assert resp.headers["X-Simulated-Endpoint"] == "true"
        # `gateway` records an external OpenAI-client program (the README's my_agents.py: a test program here)
        gateway = next(c for c in cmds if c.startswith("python -m engine gateway"))
        argv = shlex.split(gateway)[1:]
        argv[argv.index("--task-endpoint") + 1] = url
        argv[argv.index("--out") + 1] = str(tmp_path / "mine")
        argv[argv.index("my_agents.py")] = str(ROOT / "tests" / "engine" / "gateway" / "child_program.py")
        argv[argv.index("python")] = sys.executable
        proc = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and "3 model calls sent" in proc.stderr, proc.stderr
        assert (tmp_path / "mine" / "card.sqlite").exists()
    finally:
        server.terminate()
        server.communicate(timeout=30)  # reaps it and closes both pipes
