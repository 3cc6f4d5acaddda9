"""One SQL speaker (issue 36, item 3): the job's store (card.sqlite) is written and read through engine/store only;
callers name a unit of work (`store.cancel_running(...)`, `store.transcripts(...)`) and the SQL lives there.

The rule, precisely: no production module (core, engine, topologies, optimizers, benchmarks) holds SQL
text in a string literal (docstrings and comments aside) or passes one to `.execute` / `.executemany` /
`.executescript`, except
- engine/store/**: the store itself;
- engine/sweep/state.py: sweep.sqlite, the sweep's own job table (not a job's store);
- engine/cards/export.py: reads a finished card.sqlite into a rollout-card bundle (the reader of the store's file
  format, read-only; the card readers under engine/cards read card files, not SQLite);
- benchmarks/hotpotqa/corpus.py: a dataset's own page index, built from and read as the dataset's files.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCTION = ("core", "engine", "topologies", "optimizers", "benchmarks")
ALLOWED = {Path("engine/sweep/state.py"), Path("engine/cards/export.py"), Path("benchmarks/hotpotqa/corpus.py")}
SQL = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER|PRAGMA|WITH)\s+\S", re.ASCII)


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def sql_spoken(source: str) -> list[str]:
    """Lines holding SQL text in a string literal (f-strings included, docstrings not)."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    return [f"line {node.lineno}: {node.value[:50]!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
            and SQL.match(node.value)]


def allowed(path: Path) -> bool:
    rel = path.relative_to(ROOT)
    return rel.parts[:2] == ("engine", "store") or rel in ALLOWED


def test_the_scan_finds_sql_and_ignores_prose():
    assert sql_spoken('rows = store.rows("SELECT payload FROM events WHERE ok = 1")\n')
    assert sql_spoken('conn.execute(f"UPDATE nodes SET status={s!r}")\n')
    assert not sql_spoken('"""SELECT * FROM the docs: prose."""\nx = "select a method"\n')


def test_only_the_store_speaks_sql():
    problems = []
    for package in PRODUCTION:
        for path in sorted((ROOT / package).rglob("*.py")):
            if not allowed(path):
                problems += [f"{path.relative_to(ROOT)} {hit}" for hit in sql_spoken(path.read_text(encoding="utf-8"))]
    assert problems == []


def test_every_exception_still_speaks_sql():
    """An allowance nobody needs any more is dropped, not kept."""
    for rel in sorted(ALLOWED):
        assert sql_spoken((ROOT / rel).read_text(encoding="utf-8")), rel
