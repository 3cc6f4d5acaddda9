"""Hostile programs and the host-side targets they aim at, shared by the root and the unprivileged suites.

Each attack is Python source that reads its targets from a `CFG` dict prepended to it (so the same text runs
as a bare program or as an answer through a scorer, whose stdin belongs to the test case). Attacks print what
they managed; the tests never trust that: they check the host (file absent, no connection accepted, sentinel
process alive, secret bytes absent from everything the program could emit).
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PROJECT_LINE = "def run_python_sync(code: str, stdin: str = \"\", limits: SandboxLimits | None = None, *,"
BOOTSTRAP_MARK = "mpb-jail-bootstrap"

UID = "import os\nprint('uid=%d' % os.getuid(), flush=True)\n"

READ_SHADOW = UID + """
for p in ('/etc/shadow', '/etc/passwd', '/etc/hostname'):
    try:
        print(open(p).read())
    except Exception as e:
        print('denied', p, type(e).__name__)
"""

READ_PROJECT = UID + """
for p in CFG['project_files']:
    try:
        print(open(p).read())
    except Exception as e:
        print('denied', p, type(e).__name__)
for top in ('/', '/work', '/root', '/home', '/tmp', '/srv', '/opt'):
    for dirpath, dirs, files in os.walk(top):
        if dirpath.startswith('/proc'):
            dirs[:] = []
            continue
        for name in files:
            if name == 'runner.py' and 'sandbox' in dirpath:
                print(open(os.path.join(dirpath, name)).read())
"""

READ_ENVIRON = UID + """
print(dict(os.environ))
pids = ['1', 'self', str(CFG['sentinel_pid']), str(CFG['engine_pid'])] + [p for p in os.listdir('/proc') if p.isdigit()]
for pid in pids:
    for name in ('environ', 'cmdline'):
        try:
            print(pid, name, open('/proc/%s/%s' % (pid, name), 'rb').read())
        except Exception as e:
            print('denied', pid, name, type(e).__name__)
"""

WRITE = UID + """
import sqlite3
for base in CFG['write_dirs']:
    stem = os.path.join(base, CFG['stem'])
    attempts = {
        'open': lambda: open(stem + '-open', 'w').write('escaped'),
        'dir_fd': lambda: os.close(os.open(CFG['stem'] + '-dirfd', os.O_WRONLY | os.O_CREAT, 0o644,
                                           dir_fd=os.open(base, os.O_RDONLY))),
        'sqlite': lambda: sqlite3.connect(stem + '-sqlite').execute('create table t(x)'),
        'rename': lambda: (open('/work/local', 'w').write('escaped'), os.rename('/work/local', stem + '-rename')),
    }
    for how, attempt in attempts.items():
        try:
            attempt()
            print('wrote?', base, how)
        except Exception as e:
            print('denied', base, how, type(e).__name__)
"""

NETWORK = UID + """
import socket
for family, address in ((socket.AF_INET, ('127.0.0.1', CFG['tcp_port'])), (socket.AF_INET, ('localhost', CFG['tcp_port'])),
                        (socket.AF_UNIX, CFG['unix_path']), (socket.AF_UNIX, CFG['abstract'])):
    try:
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(2)
        s.connect(address)
        s.sendall(b'leak')
        print('connected', address)
    except Exception as e:
        print('denied', address, type(e).__name__)
"""

FORK_BOMB = UID + """
import time
while True:
    try:
        os.fork()
    except OSError:
        time.sleep(0.01)
"""

ALLOCATE_10GB = UID + "x = bytearray(10 * 1024 ** 3)\nprint('allocated', len(x))\n"

INFINITE_LOOP = UID + "while True:\n    pass\n"

OUTPUT_1GB = UID + "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(chunk)\n"

KILL_PARENT = UID + """
import signal
targets = [CFG['sentinel_pid'], CFG['engine_pid'], os.getppid(), 1] + [int(p) for p in os.listdir('/proc') if p.isdigit()]
for pid in targets:
    if pid in (os.getpid(), 0):
        continue
    try:
        os.kill(pid, signal.SIGKILL)
        print('killed?', pid, flush=True)
    except Exception as e:
        print('denied', pid, type(e).__name__, flush=True)
try:
    os.killpg(0, signal.SIGKILL)
except Exception as e:
    print('denied killpg', type(e).__name__)
"""

RAISE_RLIMITS = UID + """
import resource
for name in ('RLIMIT_AS', 'RLIMIT_CPU', 'RLIMIT_NPROC', 'RLIMIT_FSIZE', 'RLIMIT_NOFILE'):
    r = getattr(resource, name)
    try:
        resource.setrlimit(r, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        print('raised', name)
    except Exception as e:
        print('denied', name, type(e).__name__)
x = bytearray(10 * 1024 ** 3)
print('allocated', len(x))
"""

CTYPES = UID + """
import ctypes, ctypes.util
libc = ctypes.CDLL(None, use_errno=True)
print('setuid(0)', libc.setuid(0), 'setresuid', libc.setresuid(0, 0, 0), 'uid now', os.getuid())
print('unshare(newuser|newns)', libc.unshare(0x10000000 | 0x00020000))
print('mount', libc.mount(b'/', CFG['write_dirs'][0].encode(), None, 4096, None))
fd = libc.open(b'/etc/shadow', 0)
print('open shadow', fd)
print('kill sentinel', libc.kill(CFG['sentinel_pid'], 9))
stem = os.path.join(CFG['write_dirs'][0], CFG['stem'] + '-ctypes').encode()
print('creat', libc.creat(stem, 0o644))
print('uid=%d' % os.getuid())
"""

DISABLE_GUARDS = """
import gc, sys
for obj in gc.get_objects():
    try:
        if callable(obj) and getattr(obj, '__name__', '') in ('hook', '_guard', 'audit_hook'):
            obj.__code__ = (lambda *a, **k: None).__code__
        if isinstance(obj, list) and obj == [False]:
            obj[0] = True
    except Exception:
        pass
sys.modules.pop('_bootstrap', None)
print('guards disabled (if any)')
"""

ATTACKS = {
    "read_shadow": READ_SHADOW, "read_project": READ_PROJECT, "read_environ": READ_ENVIRON, "write": WRITE,
    "network": NETWORK, "fork_bomb": FORK_BOMB, "allocate_10gb": ALLOCATE_10GB, "infinite_loop": INFINITE_LOOP,
    "output_1gb": OUTPUT_1GB, "kill_parent": KILL_PARENT, "raise_rlimits": RAISE_RLIMITS, "ctypes": CTYPES,
}
_SEQUENCE = ("read_shadow", "read_project", "read_environ", "write", "network", "ctypes", "raise_rlimits",
             "kill_parent")
ALL_AFTER_DISABLING = DISABLE_GUARDS + f"""
for source in {[ATTACKS[name] for name in _SEQUENCE]!r}:
    try:
        exec(source, {{'CFG': CFG}})
    except BaseException as exc:
        print('attack ended with', type(exc).__name__, flush=True)
"""


def program(attack: str, cfg: dict[str, object]) -> str:
    return f"CFG = {cfg!r}\n" + attack


@dataclass
class Listener:
    """A socket server the test runs; `accepted` counts every connection it ever saw."""

    family: int
    address: object
    accepted: list[object] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.sock = socket.socket(self.family, socket.SOCK_STREAM)
        self.sock.bind(self.address)  # type: ignore[arg-type]
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, peer = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.accepted.append(peer)
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()


@dataclass
class Targets:
    """Everything on the host an attack aims at; `escaped()` lists what the host shows was reached."""

    write_dirs: list[str]
    secret: str
    socket_dir: str
    stem: str = field(default_factory=lambda: f"mpb-escape-{uuid.uuid4().hex}")

    def __post_init__(self) -> None:
        self.sentinel = subprocess.Popen(["sleep", "600"], env={"PATH": "/usr/bin:/bin", "MPB_SENTINEL": self.secret})
        self.tcp = Listener(socket.AF_INET, ("127.0.0.1", 0))
        self.unix_path = os.path.join(self.socket_dir, f"{self.stem}.sock")
        self.unix = Listener(socket.AF_UNIX, self.unix_path)
        self.abstract = Listener(socket.AF_UNIX, f"\0{self.stem}")

    def cfg(self) -> dict[str, object]:
        return {"write_dirs": self.write_dirs, "stem": self.stem, "tcp_port": self.tcp.sock.getsockname()[1],
                "unix_path": self.unix_path, "abstract": f"\0{self.stem}", "sentinel_pid": self.sentinel.pid,
                "engine_pid": os.getpid(), "project_files": [str(ROOT / "benchmarks" / "sandbox" / "runner.py"),
                                                             str(ROOT / "pyproject.toml")]}

    def written(self) -> list[str]:
        found = []
        for base in self.write_dirs:
            for name in os.listdir(base):
                if name.startswith(self.stem) and not name.endswith(".sock"):
                    found.append(os.path.join(base, name))
        return found

    def escaped(self) -> list[str]:
        problems = [f"file written: {p}" for p in self.written()]
        for listener in (self.tcp, self.unix, self.abstract):
            if listener.accepted:
                problems.append(f"connection accepted on {listener.address!r}")
        if self.sentinel.poll() is not None:
            problems.append("sentinel process was killed")
        return problems

    def close(self) -> None:
        for path in self.written():
            os.unlink(path)
        for listener in (self.tcp, self.unix, self.abstract):
            listener.close()
        if os.path.exists(self.unix_path):
            os.unlink(self.unix_path)
        self.sentinel.kill()
        self.sentinel.wait()


def leaked(text: str, targets: Targets) -> list[str]:
    """Host secrets visible in `text` (what a program printed, or feedback built from it)."""
    found = []
    shadow = Path("/etc/shadow").read_text() if os.access("/etc/shadow", os.R_OK) else ""
    if shadow and shadow.splitlines()[0] in text:
        found.append("/etc/shadow")
    if PROJECT_LINE in text or "[project]\nname = \"mas-promptbench-engine\"" in text:
        found.append("project source")
    if targets.secret in text:
        found.append("secret from a /proc/<pid>/environ")
    return found


def jail_processes() -> list[int]:
    """Host pids still running this suite's bootstrap (leftovers of a jail that should be gone)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    if BOOTSTRAP_MARK.encode() in fh.read():
                        pids.append(int(entry))
            except OSError:
                continue
    return pids
