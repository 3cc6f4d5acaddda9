"""Programs the scorers run in the sandbox around model-written code.

stdin mode: the model's program itself, run as __main__ after an import prelude (the reference harnesses
prepend common imports). functional mode: a driver that executes the model's code as a module, calls
`Solution().<fn>` (or a top-level `<fn>`) with JSON arguments read from stdin and prints the JSON result on a
marker line.
"""

from __future__ import annotations

import json
from typing import Any

RESULT_MARKER = "@@MPB-RESULT@@"

PRELUDE = (
    "import sys, os, math, re, heapq, bisect, string, random, itertools, functools, collections, copy, operator\n"
    "from typing import *\n"
    "from collections import *\n"
    "from itertools import *\n"
    "from functools import *\n"
    "from heapq import *\n"
    "from bisect import *\n"
    "from math import *\n"
    "sys.setrecursionlimit(50000)\n"
)

_STDIN_DRIVER = """\
__mpb_ns = {{"__name__": "__main__", "__builtins__": __builtins__}}
__mpb_src = {user!r}
exec({prelude!r}, __mpb_ns)
exec(compile(__mpb_src, "solution.py", "exec"), __mpb_ns)
"""

_FUNCTIONAL_DRIVER = """\
import json as __mpb_json, sys as __mpb_sys
__mpb_ns = {{"__name__": "solution", "__builtins__": __builtins__}}
__mpb_src = {user!r}
exec({prelude!r}, __mpb_ns)
exec(compile(__mpb_src, "solution.py", "exec"), __mpb_ns)
__mpb_args = __mpb_json.loads(__mpb_sys.stdin.read())
__mpb_cls = __mpb_ns.get("Solution")
if {prefer_method!r} or (__mpb_cls is not None and hasattr(__mpb_cls, {fn!r})):
    if __mpb_cls is None:
        raise NameError("class Solution is not defined")
    __mpb_target = getattr(__mpb_cls(), {fn!r})
else:
    if {fn!r} not in __mpb_ns:
        raise NameError("function {fn} is not defined")
    __mpb_target = __mpb_ns[{fn!r}]
__mpb_out = __mpb_target(*__mpb_args)
def __mpb_default(o):
    if isinstance(o, (set, frozenset)):
        return list(o)
    return repr(o)
__mpb_sys.stdout.write("\\n" + {marker!r} + __mpb_json.dumps(__mpb_out, default=__mpb_default) + "\\n")
__mpb_sys.stdout.flush()
"""


def stdin_program(user_code: str, prelude: str = PRELUDE) -> str:
    return _STDIN_DRIVER.format(prelude=prelude, user=user_code)


def functional_program(user_code: str, fn_name: str, *, prefer_method: bool, prelude: str = PRELUDE) -> str:
    """Driver calling Solution().fn_name (prefer_method, LeetCode style) or a top-level fn_name when there is
    no Solution class that has it (APPS call-based)."""
    if not fn_name.isidentifier():
        raise ValueError(f"not a function name: {fn_name!r}")
    return _FUNCTIONAL_DRIVER.format(prelude=prelude, user=user_code, fn=fn_name, prefer_method=prefer_method,
                                     marker=RESULT_MARKER)


def functional_args(args: list[Any]) -> str:
    return json.dumps(args)


_MISSING = object()


def parse_functional_stdout(stdout: str) -> tuple[bool, Any]:
    """(True, value) from the last marker line, or (False, None) when the driver printed no result."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_MARKER):
            try:
                return True, json.loads(line[len(RESULT_MARKER):])
            except ValueError:
                return False, None
    return False, None
