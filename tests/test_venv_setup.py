"""The README's set-up in a fresh venv: create one, install with the README's install command (read from the README,
tests/test_readme.py `install_command`), then run a slice of the suite with the venv's interpreter: the sandbox tests
(the jail mounts the venv and reads its site-packages), the README commands, and the dependency check.

Opt-in (MPB_VENV_TEST=1): the install takes minutes and ~2 GB (measured here: 2 min 27 s wall, 2.0 GB, from the
machine's local package index; the whole test 6 min 55 s on 2 busy cores), and CI already runs the whole suite
from such a venv (`.ci/run`), which is the proof there; this test is how to check the set-up on a machine without
running CI. The venv lives in a temporary directory that is removed afterwards.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.test_readme import ROOT, install_command, setup_commands

SLICE = ("tests/benchmarks/sandbox", "tests/test_readme.py", "tests/test_dependencies.py")

pytestmark = pytest.mark.skipif(os.environ.get("MPB_VENV_TEST") != "1",
                                reason="slow (a fresh venv and the README's install, minutes and ~2 GB): "
                                       "set MPB_VENV_TEST=1; CI runs the whole suite from a fresh venv instead")


def activated(venv: Path) -> dict[str, str]:
    """The environment `. venv/bin/activate` gives (no PYTHONPATH: what is imported comes from the venv)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "MPB_VENV_TEST")}
    return {**env, "VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
            "PIP_QUIET": "1"}


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_the_readme_setup_in_a_fresh_venv_passes_a_slice_of_the_suite():
    with tempfile.TemporaryDirectory(prefix="mpb-venv-test-") as where:
        venv = Path(where) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
        env = activated(venv)
        install = subprocess.run(["bash", "-c", install_command()], cwd=ROOT, env=env, capture_output=True,
                                 text=True, timeout=1800)
        assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
        where_from = subprocess.run(["python", "-c", "import sys, structlog, engine; print(sys.prefix); "
                                     "print(structlog.__file__); print(engine.__file__)"], cwd="/", env=env,
                                    capture_output=True, text=True, timeout=120, check=True).stdout.split()
        assert where_from[0] == str(venv) and where_from[1].startswith(str(venv))  # installed in the venv itself
        assert where_from[2].startswith(str(ROOT))  # the editable install of this checkout
        test_cmd = setup_commands()[1].split()
        assert test_cmd[:3] == ["python", "-m", "pytest"]
        proc = subprocess.run([*test_cmd, *SLICE], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=3000)
        assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
        assert " passed" in proc.stdout and " failed" not in proc.stdout
