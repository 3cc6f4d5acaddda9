"""Runs ONE ToolHop dataset tool call in this (separate, isolated) process. Standalone: imports nothing of ours.

Protocol: a JSON object on stdin {"sources": [...], "index": int | null, "name": str, "arguments": {...},
"cpu_seconds": int, "memory_bytes": int, "max_output_chars": int}; one JSON object on stdout
{"ok": true, "result": <value>} or {"ok": false, "error": "<Type>: <message>"}.

The boundary is the sandbox jail this file runs in (benchmarks/sandbox/jail.py: uid 65534, no host files, no
network, empty environment, rlimits, wall deadline). Inside it, as a second layer: resource limits (CPU seconds,
address space, file size, no core dumps) are set before any dataset code runs; each source is reduced to its
function definitions, top-level imports and trivial exception classes (example calls and other top-level
statements are dropped); names and attributes with double underscores are rejected; the code runs with a
restricted builtins table (no open/eval/exec/compile/getattr/globals/input) and an import whitelist.
"""

import ast
import builtins
import io
import json
import resource
import sys

IMPORT_WHITELIST = frozenset({
    "math", "cmath", "datetime", "time", "calendar", "re", "json", "string", "collections", "itertools",
    "functools", "operator", "statistics", "fractions", "decimal", "random", "numbers", "unicodedata", "copy",
    "heapq", "bisect", "typing", "dataclasses", "enum", "textwrap", "difflib", "hashlib", "base64", "binascii",
    "numpy", "sympy", "dateutil", "pytz", "zoneinfo", "_strptime",
})

_SAFE_BUILTIN_NAMES = (
    "abs", "all", "any", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr", "complex", "dict",
    "divmod", "enumerate", "filter", "float", "format", "frozenset", "hash", "hex", "int", "isinstance",
    "issubclass", "iter", "len", "list", "map", "max", "min", "next", "object", "oct", "ord", "pow", "print",
    "range", "repr", "reversed", "round", "set", "slice", "sorted", "str", "sum", "tuple", "type", "zip",
    "ArithmeticError", "AssertionError", "AttributeError", "Exception", "IndexError", "KeyError", "LookupError",
    "NameError", "NotImplementedError", "OverflowError", "RuntimeError", "StopIteration", "TypeError",
    "ValueError", "ZeroDivisionError", "True", "False", "None",
)
_SAFE_EXCEPTION_BASES = frozenset({"Exception", "ValueError", "RuntimeError", "KeyError", "TypeError"})


def _guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
    if level:
        raise ImportError("relative imports are not allowed in ToolHop tools")
    root = str(name).split(".", 1)[0]
    if root not in IMPORT_WHITELIST:
        raise ImportError(f"import of {name!r} is not allowed in ToolHop tools")
    return builtins.__import__(name, globals, locals, fromlist, level)


def _safe_builtins():
    table = {name: getattr(builtins, name) for name in _SAFE_BUILTIN_NAMES if hasattr(builtins, name)}
    table["__import__"] = _guarded_import
    table["__build_class__"] = builtins.__build_class__
    return table


def _is_docstring(node):
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _is_exception_class(node):
    return (isinstance(node, ast.ClassDef) and not node.decorator_list and not node.keywords and node.bases
            and all(isinstance(b, ast.Name) and b.id in _SAFE_EXCEPTION_BASES for b in node.bases)
            and all(isinstance(s, ast.Pass) or _is_docstring(s) for s in node.body))


def reduce_source(source):
    """The module of `source` keeping only function defs, imports, exception classes and docstrings."""
    tree = ast.parse(source)
    body = [node for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.Import, ast.ImportFrom)) or _is_exception_class(node)
            or _is_docstring(node)]
    module = ast.Module(body=body, type_ignores=[])
    for node in ast.walk(module):
        if isinstance(node, ast.Attribute) and node.attr.startswith("__"):
            raise PermissionError(f"attribute {node.attr!r} is not allowed in ToolHop tools")
        if isinstance(node, ast.Name) and node.id.startswith("__"):
            raise PermissionError(f"name {node.id!r} is not allowed in ToolHop tools")
    return ast.fix_missing_locations(module)


def _limit(cpu_seconds, memory_bytes):
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
    if memory_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))


def run(payload):
    sources = list(payload.get("sources") or [])
    index = payload.get("index")
    name = payload["name"]
    order = [i for i in range(len(sources)) if i != index] + ([index] if isinstance(index, int)
                                                              and 0 <= index < len(sources) else [])
    namespace = {"__builtins__": _safe_builtins(), "__name__": "toolhop_tool"}
    rejected = []
    for i in order:
        try:
            module = reduce_source(sources[i])
        except (SyntaxError, PermissionError) as exc:
            if i == index:
                raise
            rejected.append(f"source {i} rejected ({type(exc).__name__}: {exc})")
            continue
        exec(compile(module, f"<toolhop source {i}>", "exec"), namespace)
    function = namespace.get(name)
    if not callable(function):
        raise NameError(f"the tool source defines no function {name!r}" + (f"; {'; '.join(rejected)}" if rejected else ""))
    arguments = payload.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise TypeError("tool arguments must be a JSON object")
    return function(**arguments)


def main():
    payload = json.loads(sys.stdin.read())
    max_chars = int(payload.get("max_output_chars") or 100_000)
    real_stdout = sys.stdout
    _limit(int(payload.get("cpu_seconds") or 5), int(payload.get("memory_bytes") or 0))
    sys.stdout = io.StringIO()
    try:
        value = run(payload)
        try:
            text = json.dumps({"ok": True, "result": value}, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = json.dumps({"ok": True, "result": repr(value)}, ensure_ascii=False)
        if len(text) > max_chars:
            text = json.dumps({"ok": True, "result": str(value)[:max_chars]}, ensure_ascii=False)
    except BaseException as exc:  # noqa: BLE001 - everything the tool raises is reported, never propagated
        text = json.dumps({"ok": False, "error": f"{type(exc).__name__}: {str(exc)[:2000]}"}, ensure_ascii=False)
    real_stdout.write(text)
    real_stdout.flush()


if __name__ == "__main__":
    main()
