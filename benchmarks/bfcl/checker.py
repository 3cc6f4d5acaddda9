"""The official BFCL AST checker (`bfcl_eval.eval_checker.ast_eval.ast_checker`), imported the slim way.

Install (the lead adds this to .ci/run and README):

    pip install --no-deps bfcl-eval==2026.3.23

Why `--no-deps` and a shim. The `bfcl-eval` wheel is small (data files + checkers), but its declared
dependencies pull several GB (a CUDA torch via sentence-transformers, every vendor SDK). The AST checker
path needs none of them: `ast_checker.py` imports only `re`, `bfcl_eval.constants.enums`,
`bfcl_eval.constants.type_mappings` and the Java/JS type converters (all stdlib-only), plus
`bfcl_eval.constants.model_config`, which imports every model handler (and through them the vendor SDKs)
only to provide `MODEL_CONFIG_MAPPING`. The checker reads exactly one thing from it:
`MODEL_CONFIG_MAPPING[model_name.replace("_", "/")].underscore_to_dot`, and only for dotted function names.

So, when the real `model_config` is not already imported, we place a stand-in module holding a plain dict
in `sys.modules` for the duration of the checker's import and remove it afterwards (later imports of the
real module are unaffected; the checker module keeps a reference to our dict). In both cases we register
`MODEL_ID` with `underscore_to_dot=False`: dotted names (math.factorial) are checked as written, which is
what protocol-v1 section 10 specifies. (Native tool names are mapped "." -> "_" and back by
`benchmarks.bfcl.tools` before scoring, so the checker always sees the original names.)

No light runtime dependency is needed for the AST path; the data files ship in the same wheel.
"""

from __future__ import annotations

import copy
import functools
import importlib
import importlib.metadata
import importlib.util
import pickle
import sys
import threading
import types
from dataclasses import dataclass
from typing import Any

from core.errors import DataError

PINNED_VERSION = "2026.3.23"
INSTALL_HINT = f"pip install --no-deps bfcl-eval=={PINNED_VERSION}"
MODEL_ID = "mas_promptbench"  # the checker looks up MODEL_ID.replace("_", "/")

_CHECKER_MODULE = "bfcl_eval.eval_checker.ast_eval.ast_checker"
_MODEL_CONFIG_MODULE = "bfcl_eval.constants.model_config"
_lock = threading.Lock()
_loaded: tuple[Any, Any] | None = None  # (ast_checker module, Language enum)


@dataclass(frozen=True)
class _CheckerModelConfig:
    """The one field of bfcl_eval's ModelConfig that the AST checker reads."""

    underscore_to_dot: bool = False


def bfcl_eval_available() -> bool:
    return importlib.util.find_spec("bfcl_eval") is not None


@functools.lru_cache(maxsize=1)
def bfcl_eval_version() -> str | None:
    try:
        return importlib.metadata.version("bfcl-eval")
    except importlib.metadata.PackageNotFoundError:
        return None


def _load() -> tuple[Any, Any]:
    global _loaded
    with _lock:
        if _loaded is not None:
            return _loaded
        if not bfcl_eval_available():
            raise DataError(f"BFCL scoring needs the official checker: {INSTALL_HINT} (no other dependency needed)")
        stub_inserted = False
        if _CHECKER_MODULE not in sys.modules and _MODEL_CONFIG_MODULE not in sys.modules:
            stub = types.ModuleType(_MODEL_CONFIG_MODULE,
                                    "stand-in: only MODEL_CONFIG_MAPPING (see benchmarks.bfcl.checker)")
            stub.MODEL_CONFIG_MAPPING = {}  # type: ignore[attr-defined]
            sys.modules[_MODEL_CONFIG_MODULE] = stub
            stub_inserted = True
        try:
            module = importlib.import_module(_CHECKER_MODULE)
            enums = importlib.import_module("bfcl_eval.constants.enums")
        except ImportError as exc:
            raise DataError(f"bfcl_eval's AST checker does not import ({exc}); reinstall with: {INSTALL_HINT}") from exc
        finally:
            if stub_inserted:
                sys.modules.pop(_MODEL_CONFIG_MODULE, None)
        module.MODEL_CONFIG_MAPPING[MODEL_ID.replace("_", "/")] = _CheckerModelConfig(underscore_to_dot=False)
        _loaded = (module, enums.Language)
        return _loaded


def ensure_checker() -> None:
    """Import the checker now (raises DataError with the install line when bfcl_eval is missing)."""
    _load()


def run_ast_checker(functions: list[dict[str, Any]], calls: list[dict[str, Any]],
                    ground_truth: list[dict[str, Any]], checker_category: str) -> dict[str, Any]:
    """The official verdict {"valid", "error", "error_type"} for `calls` ([{name: {arg: value}}]).

    `checker_category` is the BFCL v4 test category (simple_python, multiple, parallel, parallel_multiple);
    the checker branches on it (parallel categories match calls in any order). Inputs are deep-copied.
    """
    module, language = _load()
    result: dict[str, Any] = module.ast_checker(
        _copy(functions), _copy(calls), _copy(ground_truth), language.PYTHON, checker_category, MODEL_ID,
    )
    return result


def _copy(value: Any) -> Any:
    """A deep copy of plain data (the checker may change its inputs): a pickle round trip, a third of the time of
    copy.deepcopy here; anything pickle cannot take is copied by deepcopy."""
    try:
        return pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))
    except (pickle.PicklingError, TypeError, AttributeError):
        return copy.deepcopy(value)
