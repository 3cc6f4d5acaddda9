"""A missing, empty, truncated, corrupt or read-only store, and a full disk: one line, exit 2, and what is there is
left exactly as it was (store lost is never silently re-created)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from engine.sim.build import build_policy
from engine.sim.server import SimServer
from tests.engine.cli.hostile import ROOT, BFCL_SINGLE, assert_refused, engine, job, snapshot

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("finished") / "job"
    proc = job(out)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture
def copy(finished: Path, tmp_path: Path) -> Path:
    out = tmp_path / "job"
    shutil.copytree(finished, out)
    return out


def _delete(db: Path) -> None:
    db.unlink()


def _empty(db: Path) -> None:
    db.write_bytes(b"")


def _truncate(db: Path) -> None:
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])


def _garbage_header(db: Path) -> None:
    data = bytearray(db.read_bytes())
    data[:16] = b"NOT A DATABASE!!"
    db.write_bytes(bytes(data))


def _garbage_pages(db: Path) -> None:
    data = bytearray(db.read_bytes())
    data[4096 * 4: 4096 * 9] = bytes((i * 37 + 11) % 256 for i in range(4096 * 5))
    db.write_bytes(bytes(data))


DAMAGE: list[tuple[str, Callable[[Path], None], str]] = [
    ("deleted", _delete, "store lost"), ("zero bytes", _empty, "store lost"), ("truncated", _truncate, "truncated"),
    ("garbage header", _garbage_header, "corrupt"), ("garbage pages", _garbage_pages, "corrupt"),
]


@pytest.mark.parametrize("name,damage,fragment", DAMAGE, ids=[d[0] for d in DAMAGE])
def test_damaged_store_of_a_finished_job_is_refused_untouched(copy: Path, name, damage, fragment):
    damage(copy / "card.sqlite")
    before = snapshot(copy)
    proc = job(copy)
    assert_refused(proc, fragment, "card.sqlite")
    assert snapshot(copy) == before
    assert not (copy / "card.sqlite-wal").exists() and not (copy / "card.sqlite-shm").exists()


@pytest.mark.parametrize("name,damage,fragment", DAMAGE[2:], ids=[d[0] for d in DAMAGE[2:]])
def test_card_export_of_a_damaged_store_is_one_line(copy: Path, tmp_path: Path, name, damage, fragment):
    damage(copy / "card.sqlite")
    before = snapshot(copy)
    proc = engine("card", "export", str(copy), "--out", str(tmp_path / "card"))
    assert_refused(proc)
    assert snapshot(copy) == before


@contextmanager
def tmpfs(path: Path, options: str) -> Iterator[Path]:
    path.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=True)


def test_read_only_job_directory_is_refused_untouched(copy: Path, tmp_path: Path):
    if os.geteuid() != 0:
        for path in [copy, *copy.rglob("*")]:
            path.chmod(0o555 if path.is_dir() else 0o444)
        before = snapshot(copy)
        proc = job(copy)
        for path in [copy, *copy.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        assert_refused(proc, "not writable")
        return
    with tmpfs(tmp_path / "mnt", "size=8m") as mnt:
        shutil.copytree(copy, mnt / "job")
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        before = snapshot(mnt)
        proc = job(mnt / "job")
        assert_refused(proc, "not writable")
        assert snapshot(mnt) == before


def _job_argv(out: Path, url: str) -> list[str]:
    return ["job", "--cell", BFCL_SINGLE, "--method", "identity", "--seed", "0", "--out", str(out), "--quiet",
            "--task-endpoint", url, "--model-id", "m"]


def _assert_consistent(db: Path) -> None:
    conn = sqlite3.connect(str(db))  # with its -wal: SQLite's recovery is part of the consistency promise
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()


def test_disk_full_on_tmpfs_is_one_line_and_the_store_stays_consistent(tmp_path: Path):
    with tmpfs(tmp_path / "mnt", "size=400k") as mnt, SimServer(build_policy(["bfcl"])) as sim:
        proc = engine(*_job_argv(mnt / "job", sim.base_url))
        assert_refused(proc, "disk full")
        shutil.copytree(mnt / "job", tmp_path / "left")
    _assert_consistent(tmp_path / "left" / "card.sqlite")
    assert not list((tmp_path / "left").rglob("*.tmp"))  # no half-written artifact


def test_file_size_limit_is_one_line_and_the_store_stays_consistent(tmp_path: Path):
    """RLIMIT_FSIZE (works without root): writes past the limit fail with EFBIG / SQLITE_FULL."""
    out = tmp_path / "job"
    with SimServer(build_policy(["bfcl"])) as sim:
        wrapper = ("import os, resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (300_000, 300_000)); "
                   "os.execv(sys.executable, [sys.executable, '-m', 'engine', *sys.argv[1:]])")
        env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "TASK_ENDPOINTS")}
        env["PYTHONPATH"] = str(ROOT)
        proc = subprocess.run([sys.executable, "-c", wrapper, *_job_argv(out, sim.base_url)], cwd=ROOT,
                              capture_output=True, text=True, timeout=240, env=env)
    assert_refused(proc, "storage error")
    _assert_consistent(out / "card.sqlite")
    assert not list(out.rglob("*.tmp"))


def test_run_with_a_corrupt_store_beside_its_predictions_is_refused_untouched(tmp_path: Path):
    pred = tmp_path / "pred.jsonl"
    first = engine("run", "--cell", BFCL_SINGLE, "--limit", "3", "--out", str(pred))
    assert first.returncode == 0, first.stderr
    _garbage_pages(tmp_path / "pred.run" / "card.sqlite")
    before = snapshot(tmp_path)
    proc = engine("run", "--cell", BFCL_SINGLE, "--limit", "3", "--out", str(pred))
    assert_refused(proc, "corrupt")
    assert snapshot(tmp_path) == before
