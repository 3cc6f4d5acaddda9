# mpb-jail-bootstrap v2 -- child-side bootstrap of the sandbox. Not imported by the engine: its source is passed
# to `python -I -c <source> <config-json>` and runs inside the jail, before the model-written program.
#
# 1. Apply the resource limits (resource.setrlimit) before any model-written code runs; put the
#    site-packages directories on sys.path (the interpreter runs with -S, so no .pth hook runs).
# 2. Fork: the child runs the program; this process waits and reports the child's raw wait status on the
#    status pipe, so a death by signal is told apart from an exit code. (If the program kills this process,
#    the parent sees the pipe close and falls back on the jail's exit status.)
# 3. In the child: close the status pipe, chdir to the working directory, exec main.py as __main__.
# There is deliberately no in-process guard: the jail around this interpreter is the boundary.
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
    sys.path.extend(_cfg.get("site_dirs", []))  # the interpreter runs with -S: no .pth hooks, same packages

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
    os.chdir(_cfg["workdir"])
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
