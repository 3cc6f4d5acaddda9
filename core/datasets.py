"""The dataset table: one entry per dataset; every list of datasets (the --cell grammar, the grid, the benchmark
registry, the job's and the sweep's options) is derived from it.

Adding a dataset is its package `benchmarks/<name>/` (exposing `BENCHMARK`, found by name in benchmarks/registry.py)
plus ONE `DatasetSpec` in `DATASET_TABLE`. The entry says where the data lives (`data_dir_env`, the environment
variable the loader reads when no --data-dir is given), whether it is one of section 4's application tasks
(tables 4-7), and the command-line options the dataset takes: engine/cli/job_cmd.py adds them to `job` and `run`,
engine/benchmark_setup.py refuses each one for any other task. The table is data in core (the cell grammar in
core/cell.py checks task names, and core imports nothing of ours), like the method table (core/methods.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DatasetOption:
    """One command-line option of a dataset: `--wiki-dir DIR` (a value) or `--wiki-live` (a switch, `metavar`
    None). Parsed into `dest` and handed to `Benchmark.configure(options)` under that name."""

    flag: str
    dest: str
    help: str
    metavar: str | None = "DIR"


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    data_dir_env: str | None = None
    application: bool = False  # section 4's APPLICATION tasks (tables 4-7)
    options: tuple[DatasetOption, ...] = ()
    options_title: str | None = None  # the --help group of its options (None: listed with the common ones)


_WIKI = (
    DatasetOption("--wiki-dir", "wiki_dir", "HotpotQA full-wiki abstracts corpus (bz2 JSON-lines in subdirectories), "
                  "indexed once with SQLite FTS5 into DIR/.mpb-index/"),
    DatasetOption("--wiki-live", "wiki_live", "query live Wikipedia (network; not reproducible)", None),
    DatasetOption("--wiki-pooled", "wiki_pooled", "search the pooled paragraphs of the whole data file (marks the job "
                  "non-conformant)", None),
)
_SWE = (DatasetOption("--swe-repos", "swe_repos", "task=swe: local git mirrors (<owner>__<name>[.git]) the agents' "
                      "repository tools clone at the base commit; without it SWE agents have no repository tools "
                      "(non-conformant)"),)

_SPECS = (
    DatasetSpec("gpqa", "GPQA_DATA_DIR"),
    DatasetSpec("hotpotqa", "HOTPOTQA_DATA_DIR", application=True, options=_WIKI,
                options_title="HotpotQA retrieval (task=hotpotqa needs exactly one; the tools never read the row's "
                              "own context)"),
    DatasetSpec("math", "MATH_DATA_DIR"),
    DatasetSpec("lcb", "LCB_DATA_DIR", application=True),
    DatasetSpec("apps", "APPS_DATA_DIR"),
    DatasetSpec("swe", "SWE_DATA_DIR", options=_SWE),
    DatasetSpec("bfcl", "BFCL_DATA_DIR", application=True),
    DatasetSpec("apibank", "APIBANK_ROOT"),
    DatasetSpec("toolhop", "TOOLHOP_DATA_DIR"),
)
# THE registration: name -> spec, in the protocol's order
DATASET_TABLE: dict[str, DatasetSpec] = {spec.name: spec for spec in _SPECS}


def dataset_names() -> tuple[str, ...]:
    return tuple(DATASET_TABLE)


def application_tasks() -> tuple[str, ...]:
    return tuple(name for name, spec in DATASET_TABLE.items() if spec.application)


def dataset_options() -> dict[str, tuple[DatasetOption, tuple[str, ...]]]:
    """option dest -> (the option, the datasets that take it), over every registered dataset."""
    found: dict[str, tuple[DatasetOption, tuple[str, ...]]] = {}
    for spec in DATASET_TABLE.values():
        for option in spec.options:
            known = found.get(option.dest)
            found[option.dest] = (option, (known[1] if known else ()) + (spec.name,))
    return found


def data_dir_env(name: str) -> str:
    """The environment variable a dataset's loader reads when no --data-dir is given (its entry's)."""
    env = DATASET_TABLE[name].data_dir_env
    if env is None:
        raise KeyError(f"dataset {name!r} declares no data directory variable")
    return env
