"""The jail works for an interpreter in a virtualenv under /tmp: its read-only binds are mounted after the jail's
own private /tmp, so they are not hidden by it (a venv in /tmp is how many CI systems and users run).

The child venv must see the engine's packages whatever runs this test: the machine's interpreter, or a venv made
as the README says. `--system-site-packages` alone is not enough in the second case: `python -m venv` run from a
venv bases the child on the *base* interpreter (its `home`), so the parent venv's packages (structlog, ...) would be
missing. The child therefore gets a .pth file that adds every site-packages directory of this interpreter with
`site.addsitedir` (which also runs their own .pth files: editable installs and the like)."""

from __future__ import annotations

import json
import site
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from benchmarks.sandbox.isolation import check

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

ROOT = Path(__file__).resolve().parents[3]


def this_interpreters_site_dirs() -> list[str]:
    dirs = [*site.getsitepackages(), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    return [d for d in dict.fromkeys(dirs) if Path(d).is_dir()]


def child_venv(where: Path) -> Path:
    """A venv at `where` whose interpreter imports what this one imports; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(where)],
                   check=True, timeout=120)
    python = where / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    lines = "".join(f"import site; site.addsitedir({d!r})\n" for d in this_interpreters_site_dirs())
    (Path(purelib) / "mpb_parent_site.pth").write_text(lines, encoding="utf-8")
    return python


def test_a_virtualenv_under_tmp_runs_jailed(tmp_path):
    if not check().available:
        pytest.skip("no jail on this machine: `python -m engine sandbox check` says why")
    with tempfile.TemporaryDirectory(dir="/tmp") as where:
        python = child_venv(Path(where) / "venv")
        prefix = subprocess.run([str(python), "-c", "import sys, structlog; print(sys.prefix)"], check=True,
                                capture_output=True, text=True, timeout=60).stdout.strip()
        assert prefix == str(Path(where) / "venv")  # the engine below really runs from the child venv
        program = tmp_path / "prog.py"
        program.write_text("import os, sys\nprint(os.getuid(), sys.executable)\n")
        proc = subprocess.run([str(python), "-m", "engine", "sandbox", "run", str(program)],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        outcome = json.loads(proc.stdout.strip().splitlines()[-1])
        assert outcome["isolation"]["kind"] == "bwrap" and outcome["uid"] == 65534, outcome
        assert outcome["exit_code"] == 0, outcome
        uid, executable = outcome["stdout_head"].split()
        assert uid == "65534" and executable == str(python), outcome  # jailed, with the venv's interpreter
