"""A job killed (-9) at any moment of its start-up (creating its store, writing job.json, opening the store) is
started again by the same command, to the result an uninterrupted job gives; a crash at start-up never leaves
an --out that the re-run refuses as "store lost" (seen in a sweep: job.json written, card.sqlite empty).

Each case runs the real CLI in a child process that kills itself with SIGKILL right before or right after one
start-up step; the re-run is the plain CLI."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.engine.cli.hostile import ROOT, assert_refused, engine, job, snapshot

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

CHILD = """
import importlib, os, signal, sys
module, owner, attr, when = sys.argv[1:5]
import engine.cli.main, engine.job.run_job  # everything the job imports, so every binding of the step is seen
target = importlib.import_module(module)
holder = getattr(target, owner) if owner != "-" else target
original = getattr(holder, attr)
def die():
    os.kill(os.getpid(), signal.SIGKILL)
def wrapped(*args, **kwargs):
    if when == "before":
        die()
    result = original(*args, **kwargs)
    die()
    return result
setattr(holder, attr, wrapped)
if owner == "-":  # a function imported by name elsewhere: patched wherever it is bound
    for mod in list(sys.modules.values()):
        if getattr(mod, attr, None) is original:
            setattr(mod, attr, wrapped)
from engine.cli.main import main
sys.exit(main(sys.argv[5:]))
"""

# (module, class or "-", function, before / after): every step between the empty --out and the first record
POINTS = [
    ("engine.store.schema", "-", "create_schema", "before"),   # the store file is being created
    ("engine.store.schema", "-", "create_schema", "after"),    # its schema is written, not yet in place
    ("engine.job.run_job", "-", "write_identity", "before"),   # the store is there, job.json is not
    ("engine.job.run_job", "-", "write_identity", "after"),    # job.json is written, the store not yet opened
    ("engine.store.store", "Store", "__init__", "after"),      # the store is open, nothing recorded
]


def killed_job(out: Path, point: tuple[str, str, str, str]) -> subprocess.CompletedProcess[str]:
    args = ["job", "--cell", "task=bfcl,topology=single", "--method", "identity", "--seed", "0", "--out", str(out),
            "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", CHILD, *point, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=240, env=env)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("clean") / "job"
    proc = job(out)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("point", POINTS, ids=[f"{p[2]}-{p[3]}" for p in POINTS])
def test_a_job_killed_during_start_up_runs_again(tmp_path: Path, point, uninterrupted):
    out = tmp_path / "job"
    killed = killed_job(out, point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]  # it really died at that point
    assert out.exists()
    again = job(out)
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads(again.stdout) == uninterrupted
    card = sqlite3.connect(str(out / "card.sqlite"))
    try:  # one job's records, whole: the run node once, every test rollout stored
        assert card.execute("SELECT COUNT(*) FROM nodes WHERE parent_id IS NULL").fetchone()[0] == 1
        assert card.execute("SELECT COUNT(*) FROM rollouts WHERE phase='test'").fetchone()[0] > 0
    finally:
        card.close()
    assert not [p.name for p in out.iterdir() if "creating" in p.name]  # no leftover of the killed start


def test_a_foreign_store_in_a_directory_without_job_json_is_still_refused(tmp_path: Path, uninterrupted):
    """Only a store that holds nothing (what a killed start leaves) is taken as a fresh start: a store with
    records and no job.json is someone else's, and stays untouched."""
    first = tmp_path / "first"
    assert job(first).returncode == 0
    out = tmp_path / "job"
    out.mkdir()
    (out / "card.sqlite").write_bytes((first / "card.sqlite").read_bytes())
    before = snapshot(out)
    proc = job(out)
    assert_refused(proc, "holds no job.json")
    assert snapshot(out) == before


def test_a_lost_store_of_a_started_job_is_still_refused(tmp_path: Path):
    """job.json is written only once the store is whole, so a job.json beside no store is a lost store."""
    out = tmp_path / "job"
    killed = killed_job(out, ("engine.store.store", "Store", "__init__", "after"))
    assert killed.returncode == -signal.SIGKILL
    for name in ("card.sqlite", "card.sqlite-wal", "card.sqlite-shm"):
        (out / name).unlink(missing_ok=True)
    proc = engine("job", "--cell", "task=bfcl,topology=single", "--method", "identity", "--seed", "0",
                  "--out", str(out), "--quiet")
    assert_refused(proc, "store lost")
