# Child-side bootstrap of the sandbox. Not imported by the engine: its source is passed to
# `python -I -c <source> <config-json>` and runs inside the sandboxed interpreter.
#
# 1. Apply the resource limits (resource.setrlimit) before any model-written code runs.
# 2. Fork: the child runs the program; this process (pid 1 of the PID namespace when one is used) waits
#    and reports the child's raw wait status on the status pipe, so signals survive the `unshare` wrapper.
# 3. In the child: close the status pipe, install audit hooks (no process creation, no ctypes, no writes
#    outside the working directory, and no sockets when no network namespace is available), then
#    exec main.py as __main__.
# Importing this module does nothing; it acts only when run as __main__.
import json
import os
import resource
import sys


def _bootstrap(_cfg):
    for _name, _soft, _hard in _cfg["rlimits"]:
        try:
            resource.setrlimit(getattr(resource, _name), (_soft, _hard))
        except (ValueError, OSError, AttributeError):
            pass

    _pid = os.fork()
    if _pid:
        os.close(0)
        os.close(1)
        os.close(2)
        while True:
            try:
                _, _status = os.waitpid(_pid, 0)
                break
            except InterruptedError:
                continue
        os.write(_cfg["status_fd"], json.dumps({"wait_status": _status}).encode())
        os._exit(0)

    os.close(_cfg["status_fd"])
    _workdir = os.path.realpath(_cfg["workdir"])
    os.chdir(_workdir)

    def _guard():
        allowed = (_workdir, "/dev/null", "/dev/stdout", "/dev/stderr")
        always = {"os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
                  "subprocess.Popen", "pty.spawn", "ctypes.dlopen", "ctypes.dlsym", "ctypes.call_function"}
        if not _cfg["block_processes"]:
            always = set()
        block_net = _cfg["block_network"]
        path_events = {"os.remove", "os.rename", "os.mkdir", "os.rmdir", "os.symlink", "os.link", "os.chmod",
                       "os.chown", "os.truncate", "os.utime", "shutil.rmtree", "shutil.copyfile", "shutil.move",
                       "os.chflags", "os.lchflags", "os.setxattr", "os.removexattr", "os.mkfifo", "os.mknod"}
        write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
        own_pid = os.getpid()
        realpath = os.path.realpath
        fspath = os.fspath
        busy = [False]

        def inside(path):
            if isinstance(path, int):
                return True
            try:
                p = fspath(path)
            except TypeError:
                return True
            if isinstance(p, bytes):
                p = p.decode("utf-8", "surrogateescape")
            full = realpath(os.path.join(_workdir, p))
            return any(full == a or full.startswith(a + os.sep) for a in allowed)

        def hook(event, args):
            if busy[0]:
                return
            if event in always:
                raise PermissionError(f"sandbox: {event} is not allowed")
            if block_net and event.startswith("socket."):
                raise PermissionError(f"sandbox: network access ({event}) is not allowed")
            if event in ("os.kill", "os.killpg", "signal.pthread_kill") and args and args[0] not in (own_pid, 0):
                raise PermissionError(f"sandbox: {event} is not allowed")
            if event == "import" and args and args[0] in ("_posixsubprocess", "_ctypes") and always:
                raise PermissionError(f"sandbox: importing {args[0]} is not allowed")
            writing = False
            paths = ()
            if event == "open":
                path, mode, flags = (tuple(args) + (None, None, None))[:3]
                if isinstance(mode, str):
                    writing = any(c in mode for c in "wax+")
                elif isinstance(flags, int):
                    writing = bool(flags & write_flags)
                paths = (path,)
            elif event in path_events:
                writing = True
                paths = tuple(a for a in args[:2] if isinstance(a, (str, bytes)) or hasattr(a, "__fspath__"))
            if writing:
                busy[0] = True
                try:
                    bad = [p for p in paths if not inside(p)]
                finally:
                    busy[0] = False
                if bad:
                    raise PermissionError(f"sandbox: writing outside the working directory is not allowed: {bad[0]!r}")

        sys.addaudithook(hook)

    _guard()
    del _guard

    sys.argv = ["main.py"]
    with open("main.py", encoding="utf-8") as _f:
        _source = _f.read()

    import traceback as _tb

    def _main(source):
        try:
            code = compile(source, "main.py", "exec")
        except SyntaxError as exc:
            _tb.print_exception(type(exc), exc, None)
            sys.exit(1)
        namespace = {"__name__": "__main__", "__file__": "main.py", "__builtins__": __builtins__}
        try:
            exec(code, namespace)
        except SystemExit:
            raise
        except BaseException as exc:  # report like the interpreter would, without this bootstrap's frame
            try:
                _tb.print_exception(type(exc), exc, exc.__traceback__.tb_next)
            except BaseException:
                sys.stderr.write(f"{type(exc).__name__}\n")
            sys.exit(1)

    _main(_source)


if __name__ == "__main__":
    _bootstrap(json.loads(sys.argv[1]))
