"""A real job on APPS-shaped data through the simulated endpoint, whose "model" answers with programs that
print everything they can find (environment, every /proc/<pid>/environ and cmdline, every readable file) plus
credential-shaped strings. The engine's environment holds secrets. Afterwards neither the run directory nor the
exported card holds any secret value or credential-shaped string, and the scrubber's mark shows that the
program output did reach the feedback.

The walk skips only the interpreter's own read-only files, found the same way whether the engine runs from the
machine's interpreter or from a venv: inside the jail the interpreter runs with -S, so a venv's root is not
sys.prefix there but the parent of sys.executable's bin/. (Walking the README's 2 GB venv file by file overran the
4 MiB output cap: the feedback was only "Output limit exceeded on test 1", so nothing reached the scrubber.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.benchmarks.sandbox.hostile import ROOT

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

PRINT_EVERYTHING = r'''
import os, sys
found = [repr(dict(os.environ))]
for pid in os.listdir('/proc'):
    for name in ('environ', 'cmdline'):
        try:
            found.append(open('/proc/%s/%s' % (pid, name), 'rb').read().decode('latin-1'))
        except Exception:
            pass
# the interpreter's own read-only files: its prefixes and, for a venv, the venv's root (the jail runs it with -S,
# so sys.prefix is the base interpreter's there and the venv's site-packages would be walked file by file)
skip = ('/proc', '/sys', '/dev', '/usr', sys.base_prefix, sys.prefix,
        os.path.dirname(os.path.dirname(sys.executable)))
for dirpath, dirs, files in os.walk('/'):
    if dirpath.startswith(skip):
        dirs[:] = []
        continue
    for name in files:
        try:
            found.append(open(os.path.join(dirpath, name), 'rb').read(4096).decode('latin-1'))
        except Exception:
            pass
fake = ' '.join(['sk-' + 'Z' * 40, 'Bearer ' + 'q' * 30, 'hf_' + 'W' * 30])
everything = '\n'.join(found)
print(fake, everything)
sys.stderr.write(everything[-3000:] + '\n' + fake + '\n')
sys.exit(EXIT)
'''


def write_fixture(data_dir: Path) -> None:
    splits = json.loads((ROOT / "benchmarks" / "apps" / "apps_splits.json").read_text())
    ids = [*splits["train"], *splits["validation"], *splits["test"]]
    with (data_dir / "test.jsonl").open("w") as fh:
        for n, pid in enumerate(ids):
            program = PRINT_EVERYTHING.replace("EXIT", str(n % 2))  # odd rows crash, even rows answer wrong
            fh.write(json.dumps({
                "problem_id": int(pid), "question": "Print the sum of two integers.", "difficulty": "interview",
                "solutions": json.dumps([program]), "url": "", "starter_code": "",
                "input_output": json.dumps({"inputs": ["1 2\n", "3 4\n", "5 6\n"], "outputs": ["3\n", "7\n", "11\n"]}),
            }) + "\n")


def all_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file())


def test_secrets_never_reach_records_or_the_card(tmp_path: Path):
    data_dir = tmp_path / "apps"
    data_dir.mkdir()
    write_fixture(data_dir)
    secrets = {"OPENAI_API_KEY": f"sk-live-{uuid.uuid4().hex}", "REFLECTION_API_KEY": f"rk-{uuid.uuid4().hex}",
               "HF_TOKEN": f"hf_{uuid.uuid4().hex}", "MPB_E2E_SECRET": f"plain-{uuid.uuid4().hex}"}
    env = {**os.environ, **secrets, "PYTHONPATH": str(ROOT)}
    out, card = tmp_path / "job", tmp_path / "card"
    job = subprocess.run([sys.executable, "-m", "engine", "job", "--cell", "task=apps,topology=single", "--method",
                          "identity", "--seed", "0", "--out", str(out), "--data-dir", str(data_dir), "--quiet"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=280)
    assert job.returncode == 0, job.stderr[-3000:]
    exported = subprocess.run([sys.executable, "-m", "engine", "card", "export", str(out), "--out", str(card)],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert exported.returncode == 0, exported.stderr[-3000:]
    for where in (out, card):
        blob = all_bytes(where)
        for name, value in secrets.items():
            assert value.encode() not in blob, f"{name} leaked into {where}"
        for shaped in (b"sk-" + b"Z" * 40, b"Bearer " + b"q" * 30, b"hf_" + b"W" * 30):
            assert shaped not in blob, f"{shaped[:10]!r}... leaked into {where}"
        assert b"[redacted]" in blob  # the program's output did reach the feedback, scrubbed
    assert b"Runtime error on test 1" in all_bytes(out) and b"Wrong answer on test 1" in all_bytes(out)
