"""Replay check against the API-Bank checkout's own API classes (the protocol's scoring path).

For a prediction whose API name equals the gold: instantiate the API classes of the checkout (level 3 uses
lv3_apis), replay the dialogue's earlier calls (ToolSearcher calls are skipped), execute the prediction, and
compare its result with the recorded gold result through the API's own `check_api_call_correctness`.
The checkout's `apis` package is registered under its own name (its modules do `from apis.api import API`)
without running its `__init__.py`, so only the APIs a task needs are imported. This runs upstream code
in-process: use a checkout you trust.
"""

from __future__ import annotations

import copy
import importlib
import json
import sys
import threading
import types
from pathlib import Path
from typing import Any

from benchmarks.apibank.loader import api_source_file

_LOCK = threading.RLock()
_MARK = "_mas_promptbench_apibank_root"


def checkout_available(root: Path | None) -> bool:
    return root is not None and (root / "apis" / "api.py").is_file() and (root / "init_database").is_dir()


def _register_package(name: str, directory: Path, root: Path) -> None:
    existing = sys.modules.get(name)
    if existing is not None and getattr(existing, _MARK, None) == str(root):
        return
    if existing is not None and getattr(existing, _MARK, None) is None:
        raise RuntimeError(f"a different module named {name!r} is already imported; cannot load API-Bank's")
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        del sys.modules[key]
    package = types.ModuleType(name)
    package.__path__ = [str(directory)]
    package.__package__ = name
    setattr(package, _MARK, str(root))
    sys.modules[name] = package


class ApiBankSession:
    """Fresh API instances (fresh databases) for one scored task."""

    def __init__(self, root: Path, level: str) -> None:
        self.root = root
        self.subdir = "lv3_apis" if level == "3" and (root / "lv3_apis").is_dir() else "apis"
        with _LOCK:
            _register_package("apis", root / "apis", root)
            if self.subdir != "apis":
                _register_package(self.subdir, root / self.subdir, root)
        self.databases = {p.stem: json.loads(p.read_text(encoding="utf-8"))
                          for p in sorted((root / "init_database").glob("*.json"))}
        self.instances: dict[str, Any] = {}
        self.token_checker = self._instance("CheckToken") if api_source_file(root, self.subdir, "CheckToken") else None

    def _class(self, api_name: str) -> type:
        path = api_source_file(self.root, self.subdir, api_name)
        if path is None:
            raise KeyError(f"API {api_name!r} not found in {self.root / self.subdir}")
        with _LOCK:
            module = importlib.import_module(f"{self.subdir}.{path.stem}")
        cls = getattr(module, api_name, None)
        if not isinstance(cls, type):
            raise KeyError(f"{path} defines no class {api_name!r}")
        return cls

    def _instance(self, api_name: str) -> Any:
        if api_name not in self.instances:
            cls = self._class(api_name)
            args: list[Any] = []
            database = getattr(cls, "database_name", None)
            if database in self.databases:
                args.append(copy.deepcopy(self.databases[database]))
            if api_name != "CheckToken" and "token" in getattr(cls, "input_parameters", {}) and self.token_checker:
                args.append(self.token_checker)
            self.instances[api_name] = cls(*args)
        return self.instances[api_name]

    def call(self, api_name: str, params: dict[str, Any]) -> Any:
        api = self._instance(api_name)
        declared = getattr(api, "input_parameters", {}) or {}
        processed: dict[str, Any] = {}
        for key, value in params.items():
            if key not in declared:
                raise ValueError(f"invalid parameter name {key!r} for {api_name}")
            kind = declared[key].get("type") if isinstance(declared[key], dict) else None
            if kind == "int":
                value = int(value)
            elif kind == "float":
                value = float(value)
            elif kind == "bool" and not isinstance(value, bool):
                value = str(value) == "True"
            processed[key] = value
        return api.call(**processed)

    def check(self, api_name: str, result: Any, gold_result: Any) -> bool:
        api = self._instance(api_name)
        return bool(api.check_api_call_correctness(copy.deepcopy(result), copy.deepcopy(gold_result)))


def replay_check(root: Path, gold: dict[str, Any], api_name: str, params: dict[str, Any]) -> tuple[bool, str | None]:
    """(correct, error message). Exceptions raised by the upstream code count as a wrong call."""
    try:
        session = ApiBankSession(root, str(gold.get("level", "1")))
        for prior in gold.get("prior_calls", []):
            if prior["api_name"] != "ToolSearcher":
                session.call(prior["api_name"], prior["param_dict"])
        result = session.call(api_name, params)
        return session.check(api_name, result, gold.get("result")), None
    except Exception as exc:  # noqa: BLE001 - the upstream API raising is a wrong prediction, not a scorer bug
        return False, f"{type(exc).__name__}: {exc}"
