"""Import direction: core imports nothing of ours; topologies/optimizers/benchmarks import only core."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OURS = {"core", "engine", "topologies", "optimizers", "benchmarks"}
ALLOWED = {"core": set(), "topologies": {"core"}, "optimizers": {"core"}, "benchmarks": {"core"}}


def imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found & OURS


def test_layers_import_only_downwards():
    problems = []
    for package, allowed in ALLOWED.items():
        for path in (ROOT / package).rglob("*.py"):
            bad = imported_packages(path) - allowed - {package}
            if bad:
                problems.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert problems == []


PRODUCTION = ("core", "engine", "topologies", "optimizers", "benchmarks")
EVENT_WRITERS = {"op_event", "record_event"}  # the Store's two ways of inserting into the events stream
RECORDER = ROOT / "engine" / "recorder.py"
STORE = ROOT / "engine" / "store"


def _calls(path: Path) -> list[tuple[int, ast.Attribute]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(node.lineno, node.func) for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)]


def _production_files() -> list[Path]:
    return [p for package in PRODUCTION for p in (ROOT / package).rglob("*.py") if STORE not in p.parents]


def test_only_the_recorder_writes_model_call_events():
    """Every model call (agent turn, reflection, judge, probe, baseline run) is recorded by engine.recorder: no
    other production module inserts events, so no second recording path can drift from it."""
    writers = {f"{p.relative_to(ROOT)}:{line}" for p in _production_files()
               for line, func in _calls(p) if func.attr in EVENT_WRITERS}
    assert writers, "the recorder's event writes were not found: the check would be vacuous"
    assert {w.split(":")[0] for w in writers} == {str(RECORDER.relative_to(ROOT))}, sorted(writers)


def test_recorder_is_the_one_caller_of_the_chat_endpoints_for_model_calls():
    """Model calls reach the endpoint pool only through the recorder (`.chat(body)`); topologies call the agent
    context's `chat(role=..., ...)`, which goes through the recorder too."""
    transports = (ROOT / "engine" / "chat", ROOT / "engine" / "sim")  # the pool itself and the simulated server
    senders = sorted(f"{p.relative_to(ROOT)}:{line}" for p in (ROOT / "engine").rglob("*.py")
                     if p != RECORDER and not any(t in p.parents for t in transports)
                     for line, func in _calls(p)
                     if func.attr == "chat" and isinstance(func.value, ast.Attribute)
                     and func.value.attr in ("pool", "endpoint", "task_pool"))
    assert senders == []


def test_no_module_calls_private_store_methods():
    """The store's writer and SQL stay behind its public `op_*` / async API."""
    offenders = []
    for path in _production_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and ((isinstance(node.value, ast.Name) and node.value.id == "store")
                         or (isinstance(node.value, ast.Attribute) and node.value.attr == "store"))):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}")
    assert offenders == []
