"""Every bad input to every command: exit 2, exactly one stderr line, no traceback, nothing written or changed.

Each case runs the real CLI in a subprocess inside a scratch directory and compares a snapshot (paths, bytes,
modes) of that directory before and after.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.engine.cli.hostile import BFCL_SINGLE, assert_refused, engine, snapshot

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

J = ["job", "--cell", BFCL_SINGLE, "--method", "identity"]
R = ["run", "--cell", BFCL_SINGLE]

# (id, argv builder given the scratch dir, fragment of the error line)
Case = tuple[str, Callable[[Path], list[str]], str]

CASES: list[Case] = [
    # abbreviations are not options
    ("job --bud", lambda d: [*J, "--out", str(d / "o"), "--bud", "5"], "unrecognized arguments: --bud"),
    ("job --meth", lambda d: ["job", "--cell", BFCL_SINGLE, "--meth", "identity", "--out", str(d / "o")],
     "--meth"),
    ("run --lim", lambda d: [*R, "--out", str(d / "p.jsonl"), "--lim", "2"], "unrecognized arguments: --lim"),
    ("serve-sim --por", lambda d: ["serve-sim", "--por", "0"], "unrecognized arguments: --por"),
    ("aggregate --boot", lambda d: ["aggregate", str(d), "--boot", "2000"], "unrecognized arguments: --boot"),
    ("card export --zi", lambda d: ["card", "export", str(d), "--out", str(d / "c"), "--zi"], "--zi"),
    # ASCII digits only
    ("team_size arabic", lambda d: ["job", "--cell", "task=bfcl,topology=independent,team_size=٤", "--method",
                                    "identity", "--out", str(d / "o")], "ASCII"),
    ("team_size underscore", lambda d: ["job", "--cell", "task=bfcl,topology=independent,team_size=0_4",
                                        "--method", "identity", "--out", str(d / "o")], "ASCII digits"),
    ("seed arabic", lambda d: [*J, "--out", str(d / "o"), "--seed", "١"], "ASCII digits"),
    ("budget arabic", lambda d: [*J, "--out", str(d / "o"), "--budget", "٥"], "ASCII digits"),
    ("concurrency fullwidth", lambda d: [*J, "--out", str(d / "o"), "--concurrency", "８"], "ASCII digits"),
    ("run limit arabic", lambda d: [*R, "--out", str(d / "p.jsonl"), "--limit", "٣"], "ASCII digits"),
    ("serve-sim port arabic", lambda d: ["serve-sim", "--port", "٨٠٠٠"], "ASCII digits"),
    ("aggregate bootstrap arabic", lambda d: ["aggregate", str(d), "--bootstrap", "٢٠٠٠"], "ASCII digits"),
    # finite positive timeouts
    *[(f"request-timeout {v}", (lambda v: lambda d: [*J, "--out", str(d / "o"), "--request-timeout", v])(v),
       "--request-timeout") for v in ("-1", "0", "nan", "inf", "1e999", "-inf", "1_0")],
    ("startup-timeout nan", lambda d: [*J, "--out", str(d / "o"), "--startup-timeout", "nan"], "--startup-timeout"),
    ("run request-timeout nan", lambda d: [*R, "--out", str(d / "p.jsonl"), "--request-timeout", "nan"],
     "--request-timeout"),
    ("serve-sim delay nan", lambda d: ["serve-sim", "--port", "0", "--delay-ms", "nan"], "--delay-ms"),
    ("serve-sim retry-after inf", lambda d: ["serve-sim", "--port", "0", "--retry-after", "inf"], "--retry-after"),
    ("serve-sim slow -1", lambda d: ["serve-sim", "--port", "0", "--slow-seconds", "-1"], "--slow-seconds"),
    # positive limits
    ("run limit 0", lambda d: [*R, "--out", str(d / "p.jsonl"), "--limit", "0"], "--limit must be >= 1"),
    ("run limit -1", lambda d: [*R, "--out", str(d / "p.jsonl"), "--limit", "-1"], "--limit must be >= 1"),
    ("run concurrency 0", lambda d: [*R, "--out", str(d / "p.jsonl"), "--concurrency", "0"], "--concurrency"),
    ("job concurrency -3", lambda d: [*J, "--out", str(d / "o"), "--concurrency", "-3"], "--concurrency"),
    # endpoints
    ("endpoint scheme", lambda d: [*J, "--out", str(d / "o"), "--task-endpoint", "ftp://h/v1", "--model-id", "m"],
     "http(s) URL"),
    ("endpoint port", lambda d: [*J, "--out", str(d / "o"), "--task-endpoint", "http://h:99999/v1",
                                 "--model-id", "m"], "not a valid URL"),
    ("endpoint brackets", lambda d: [*J, "--out", str(d / "o"), "--task-endpoint", "http://[::1/v1",
                                     "--model-id", "m"], "not a valid URL"),
    ("empty model id", lambda d: [*J, "--out", str(d / "o"), "--model-id", ""], "model id"),
    # --out
    ("job out is a file", lambda d: [*J, "--out", str(d / "file.txt")], "not a directory"),
    ("job out is /dev/null", lambda d: [*J, "--out", "/dev/null"], "not a directory"),
    ("job out under a file", lambda d: [*J, "--out", str(d / "file.txt" / "sub")], "not a directory"),
    ("job out name too long", lambda d: [*J, "--out", str(d / ("x" * 300))], "longer than 255 bytes"),
    ("run out is a dir", lambda d: [*R, "--out", str(d)], "is a directory"),
    ("run out is /dev/null", lambda d: [*R, "--out", "/dev/null"], "not a regular file"),
    ("run out name too long", lambda d: [*R, "--out", str(d / ("p" * 300 + ".jsonl"))], "longer than 255 bytes"),
    ("aggregate out is a dir", lambda d: ["aggregate", str(d), "--out", str(d)], "is a directory"),
    ("aggregate out is /dev/null", lambda d: ["aggregate", str(d), "--out", "/dev/null"], "not a regular file"),
    ("aggregate out too long", lambda d: ["aggregate", str(d), "--out", str(d / ("s" * 300))], "longer than 255"),
    ("aggregate plot is a file", lambda d: ["aggregate", str(d), "--plot", str(d / "file.txt")], "not a directory"),
    ("card export out too long", lambda d: ["card", "export", str(d), "--out", str(d / ("c" * 300))],
     "longer than 255"),
    ("serve-sim bad host", lambda d: ["serve-sim", "--port", "0", "--host", "256.1.1.1"], "cannot listen"),
    ("serve-sim --require-api-key-env bad", lambda d: ["serve-sim", "--port", "0", "--require-api-key-env", "A-B"],
     "--require-api-key-env"),
    ("serve-sim log is a dir", lambda d: ["serve-sim", "--port", "0", "--log", str(d)], "is a directory"),
    # bundles of the wrong shape
    *[(f"bundle {name}", (lambda name: lambda d: [*R, "--out", str(d / "p.jsonl"), "--limit", "1", "--bundle",
                                                  str(d / f"bundle-{name}.json")])(name), frag)
      for name, frag in (("list", "not a prompt bundle"), ("roles-string", "not a prompt bundle"),
                         ("roles-empty", "not a prompt bundle"), ("empty-prompt", "empty prompt"),
                         ("wrong-role", "this cell needs ['solver']"), ("not-json", "not valid JSON"),
                         ("digest", "bundle_sha256"), ("prompt-number", "not a prompt bundle"),
                         ("missing", "missing artifact"))],
]

BUNDLES = {
    "list": [1, 2], "roles-string": {"roles": "solver"}, "roles-empty": {"roles": {}},
    "empty-prompt": {"roles": {"solver": "  "}}, "wrong-role": {"roles": {"planner": "x"}},
    "digest": {"roles": {"solver": "x"}, "bundle_sha256": "0" * 64},
    "prompt-number": {"roles": {"solver": 7}},
}


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    (tmp_path / "file.txt").write_text("a file, not a directory\n")
    for name, body in BUNDLES.items():
        (tmp_path / f"bundle-{name}.json").write_text(json.dumps(body))
    (tmp_path / "bundle-not-json.json").write_text("{roles: solver")
    return tmp_path


@pytest.mark.parametrize("name,build,fragment", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused_and_nothing_changes(scratch: Path, name: str, build, fragment: str):
    before = snapshot(scratch)
    proc = engine(*build(scratch), timeout=120)
    assert_refused(proc, fragment)
    assert snapshot(scratch) == before


@contextmanager
def read_only_dir(path: Path) -> Iterator[Path]:
    """A directory that cannot be written: a read-only tmpfs as root, mode 0555 otherwise."""
    path.mkdir()
    if os.geteuid() != 0:
        path.chmod(0o555)
        try:
            yield path
        finally:
            path.chmod(0o755)
        return
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(path)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"root without mount rights, so no read-only directory can be made: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=True)


@pytest.mark.parametrize("target", ["job out", "job out below", "run out", "serve-sim log"])
def test_read_only_output_location_is_refused(tmp_path: Path, target: str):
    with read_only_dir(tmp_path / "ro") as ro:
        before = snapshot(ro)
        argv = {"job out": [*J, "--out", str(ro)], "job out below": [*J, "--out", str(ro / "a" / "b")],
                "run out": [*R, "--out", str(ro / "p.jsonl")],
                "serve-sim log": ["serve-sim", "--port", "0", "--log", str(ro / "log.jsonl")]}[target]
        proc = engine(*argv, timeout=120)
        assert_refused(proc, "not writable")
        assert snapshot(ro) == before
