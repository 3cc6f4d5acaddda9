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
