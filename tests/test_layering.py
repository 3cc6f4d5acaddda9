"""Import direction: core imports nothing of ours; topologies/optimizers/benchmarks import only core."""

import ast
import io
import re
import tokenize
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


# ------------------------------------------------------------------ dataset knowledge lives in benchmarks/
# The nine task names are the protocol's grid vocabulary (the dataset table core/datasets.py, a dataset's one
# registration, and core/cell.py, core/protocol.py hold it as data);
# team specs are data files named after them (topologies/teams/<task>.json). Anywhere else in core/ and
# topologies/ a string, docstring or comment naming a dataset would be dataset knowledge outside its benchmark.
GRID_VOCABULARY = {Path("core/cell.py"), Path("core/protocol.py"), Path("core/datasets.py")}
TEAM_FILES = sorted(p.name for p in (ROOT / "topologies" / "teams").glob("*.json"))
PROBE_FACTS = ("call_tool", "score_async", "runs_model_code")  # known optional members (also checked below)


def dataset_names() -> set[str]:
    from core.cell import TASKS

    return {*TASKS, *TEAM_FILES, *(Path(f).stem for f in TEAM_FILES)}


def dataset_mentions(source: str, names: set[str]) -> list[str]:
    """String literals (docstrings included) and comments that are, or contain as a word, a dataset or team-file
    name."""
    hits = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.STRING, tokenize.COMMENT):
            words = set(re.findall(r"[a-z0-9_]+(?:\.json)?", token.string.lower()))
            if words & names:
                hits.append(f"line {token.start[0]}: {token.string[:60]!r}")
    return hits


def test_dataset_scan_finds_a_hard_coded_name():
    names = dataset_names()
    assert dataset_mentions('NO_RERENDER = frozenset({"swe"})\n', names)
    assert dataset_mentions('if bench.name == "bfcl":\n    pass\n', names)
    assert dataset_mentions('path = TEAMS / f"toolhop.json"\n', names)
    assert dataset_mentions('"""Single: 100 steps for SWE."""\nX = 1\n', names)
    assert dataset_mentions('x = 1  # GPQA needs this\n', names)
    assert dataset_mentions('import math\ny = math.inf  # no dataset here\n', names) == []


def test_topologies_and_core_name_no_dataset():
    names = dataset_names()
    assert {"gpqa", "swe", "bfcl", "toolhop.json"} <= names
    problems = []
    for package in ("core", "topologies"):
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if relative in GRID_VOCABULARY:
                continue
            problems += [f"{relative} {hit}" for hit in dataset_mentions(path.read_text(encoding="utf-8"), names)]
    assert problems == []


# ------------------------------------------------------------------ benchmarks are reached through the protocol
def protocol_members() -> set[str]:
    from core.benchmark import Benchmark
    from core.simulation import SimulatedBenchmark

    members = set()
    for proto in (Benchmark, SimulatedBenchmark):
        members |= set(proto.__annotations__)
        members |= {k for k, v in vars(proto).items()
                    if (callable(v) or isinstance(v, property)) and not k.startswith("_")}
    return members


def benchmark_lookups(source: str, members: set[str]) -> list[str]:
    """getattr/hasattr calls that probe a benchmark object or name a Benchmark protocol member."""
    hits = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2):
            continue
        target, attr = node.args[0], node.args[1]
        target_name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
        member = attr.value if isinstance(attr, ast.Constant) and isinstance(attr.value, str) else ""
        if "bench" in target_name.lower() or (member in members and member != "name"):
            hits.append(f"line {node.lineno}: {node.func.id}({target_name}, {member!r})")
    return hits


def test_lookup_scan_finds_a_probe():
    members = protocol_members()
    assert set(PROBE_FACTS) <= members and {"simulate", "failure_modes", "scorer_id"} <= members
    assert benchmark_lookups('f = getattr(self.bench, "call_tool", None)\n', members)
    assert benchmark_lookups('x = hasattr(found.benchmark, "anything")\n', members)
    assert benchmark_lookups('s = getattr(obj, "score_async", None)\n', members)
    assert benchmark_lookups('v = getattr(args, "seed")\n', members) == []


def test_benchmarks_are_reached_only_through_the_protocol():
    members = protocol_members()
    problems = []
    for package in ("core", "topologies", "optimizers", "engine"):
        for path in sorted((ROOT / package).rglob("*.py")):
            problems += [f"{path.relative_to(ROOT)} {hit}"
                         for hit in benchmark_lookups(path.read_text(encoding="utf-8"), members)]
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


# ------------------------------------------------------------------ floors inside engine/
# A unit is a wing (a subpackage of engine/) or a module beside the wings. Each may import only the units named
# here (module-level, function-level and TYPE_CHECKING imports alike); `None` means any. Read bottom-up: the floor
# imports no other engine module; the job imports no CLI and no sim (it asks `simulated` for one); cards, aggregate
# and sweep import no runner internals (runner, rollout, agent_context).
FLOOR: set[str] = set()
ENGINE_UNITS: dict[str, set[str] | None] = {
    **{unit: FLOOR for unit in ("args", "benchmark_setup", "call_sites", "containment", "heap", "lifecycle", "log",
                                "reflection_fit", "retry", "runtimes", "simulated", "store")},
    "chat": {"lifecycle", "log"},
    "progress": {"log"},
    "io_errors": {"containment"},
    "rollout": {"store"},
    "cards": {"args", "benchmark_setup", "log", "store"},
    "aggregate": {"args", "log"},
    "gateway": {"call_sites", "chat", "containment"},
    "recorder": {"call_sites", "chat", "retry", "store"},
    "sim": {"args", "chat", "log", "simulated"},
    "agent_context": {"call_sites", "chat", "gateway", "recorder", "store"},
    "reflection": {"call_sites", "chat", "log", "recorder", "reflection_fit", "retry", "store"},
    "runner": {"agent_context", "chat", "containment", "gateway", "retry", "rollout", "store"},
    "job": {"args", "benchmark_setup", "chat", "containment", "gateway", "heap", "log", "progress", "reflection",
            "rollout", "runner", "runtimes", "simulated", "store"},
    "sweep": {"aggregate", "args", "chat", "job", "log", "progress", "runtimes", "sim", "simulated"},
    "cli": None,
    "__main__": {"cli"},
}


def engine_modules() -> dict[str, str]:
    """Dotted name -> source of every module under engine/."""
    found = {}
    for path in (ROOT / "engine").rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path.read_text(encoding="utf-8")
    return found


def engine_edges(modules: dict[str, str]) -> dict[str, set[str]]:
    """Module -> the engine modules it imports (the longest known prefix of each imported name)."""
    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name if name and name != "engine" else None

    edges = {}
    for module, source in modules.items():
        names = []
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                names += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names += [f"{node.module}.{a.name}" for a in node.names]
        edges[module] = {t for t in map(known, names) if t is not None and t != module}
    return edges


def unit_of(module: str) -> str:
    return module.split(".")[1]


def floor_violations(edges: dict[str, set[str]], table: dict[str, set[str] | None]) -> list[str]:
    problems = []
    for module, targets in sorted(edges.items()):
        unit = unit_of(module) if "." in module else None
        if unit is None:
            continue
        if unit not in table:
            problems.append(f"{module}: unit {unit!r} is not in ENGINE_UNITS")
            continue
        allowed = table[unit]
        for target in sorted(targets):
            if allowed is not None and unit_of(target) != unit and unit_of(target) not in allowed:
                problems.append(f"{module} imports {target} ({unit} may import only {sorted(allowed)})")
    return problems


def find_circle(edges: dict[str, set[str]]) -> list[str]:
    """One import circle as a path [a, b, ..., a], or [] if the graph has none (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(edges):
        if state.get(start):
            continue
        path, stack = [start], [iter(sorted(edges[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not state.get(nxt) and nxt in edges:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(edges[nxt])))
    return []


def test_engine_wings_import_only_their_floors():
    edges = engine_edges(engine_modules())
    assert {"engine.job.run_job", "engine.store.store", "engine.cli.main"} <= set(edges)
    assert floor_violations(edges, ENGINE_UNITS) == []


def test_engine_has_no_import_circle():
    assert find_circle(engine_edges(engine_modules())) == []


def test_the_floor_checker_finds_a_planted_upward_arrow_and_circle():
    edges = engine_edges(engine_modules())
    assert "engine.store" in edges["engine.job.run_job"] or "engine.store.store" in edges["engine.job.run_job"]
    planted = {**edges, "engine.store.store": edges["engine.store.store"] | {"engine.job.run_job"}}
    assert floor_violations(planted, ENGINE_UNITS) == [
        "engine.store.store imports engine.job.run_job (store may import only [])"]
    circle = find_circle(planted)
    assert circle[0] == circle[-1] and "engine.job.run_job" in circle and len(circle) >= 3
    source = "def f():\n    from engine.cli.job_cmd import job_main\n"  # a function-level import counts
    assert engine_edges({"engine.job.x": source, "engine.cli.job_cmd": ""})["engine.job.x"] == {"engine.cli.job_cmd"}
    assert floor_violations({"engine.job.x": {"engine.cli.job_cmd"}}, ENGINE_UNITS)
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": set()}) == []
