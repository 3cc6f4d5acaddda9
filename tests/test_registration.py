"""A new method, dataset or framework is ONE registration (issue 36 item 1): each toy below is registered only by
adding its entry to its table (core/methods.py, core/datasets.py, core/frameworks.py; undone after the test), and
every list derived from that table picks it up: the grid and the sweep's and the synthetic grids, the --cell
grammar and registry keys, the CLI choices (a command line naming the toy parses) and help texts, the RNG bases,
the optimizer registry, the dataset options, the runtime ids and install hints, the simulated judge's kinds."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from core import datasets, frameworks, methods
from core.cell import parse_cell, registry_key, with_framework
from core.datasets import DatasetOption, DatasetSpec
from core.errors import CellError, UsageError
from core.frameworks import FrameworkSpec
from core.grid import grid_configurations, protocol_cells
from core.methods import GridRole, MethodSpec
from core.protocol import runtime_implementation_id
from core.seeds import method_rng_seed
from engine.aggregate.synthetic import grid_cells
from engine.args import StrictParser
from engine.cli.job_cmd import job_parser
from engine.benchmark_setup import configure_benchmark, dataset_options
from engine.runtimes import build_topology, install_hint, missing_extra
from engine.sim.judge import SimJudge, judge_tasks, unscripted_judge_tasks
from engine.sweep.cli import add_grid_options, data_dirs, planned_jobs
from engine.sweep.grid import framework_keys, protocol_grid
from optimizers import registry

JOB = ["--cell", "task=bfcl,topology=sequential", "--method", "identity", "--out", "x"]


class ToyMethod:
    """The toy method's class (built by the registry from the spec's `factory` path)."""

    name = "toy"
    smallest_useful_budget = 3

    def __init__(self, seed: int = 0, reflection: Any = None, judge: Any = None):
        self.seed, self.reflection, self.judge = seed, reflection, judge

    def plan(self, budget: int, n_train: int, n_validation: int) -> str:
        return "toy"

    async def optimize(self, *args: Any) -> Any:
        raise NotImplementedError


TOY_METHOD = MethodSpec("toy", help="a toy method of the registration test", factory=f"{__name__}:ToyMethod",
                        grid_role=GridRole.PRIMARY, rng_base=77, uses_reflection=True,
                        task_model_components=("judge",), judge_tasks=("toy_rank",))
TOY_DATASET = DatasetSpec("toyset", "TOYSET_DATA_DIR", application=True, options_title="Toy corpus",
                          options=(DatasetOption("--toy-corpus", "toy_corpus", "the toy dataset's corpus"),))
TOY_FRAMEWORK = FrameworkSpec("toyfw", "mas-promptbench-engine/toyfw-gateway-v1", module="toyfw_runtime",
                              extra="toyfw", imports=("toyfw_sdk_not_installed",), only_topology="sequential")


@pytest.fixture
def toy_method(monkeypatch: pytest.MonkeyPatch) -> MethodSpec:
    monkeypatch.setitem(methods.METHOD_TABLE, TOY_METHOD.name, TOY_METHOD)
    return TOY_METHOD


@pytest.fixture
def toy_dataset(monkeypatch: pytest.MonkeyPatch) -> DatasetSpec:
    monkeypatch.setitem(datasets.DATASET_TABLE, TOY_DATASET.name, TOY_DATASET)
    return TOY_DATASET


@pytest.fixture
def toy_framework(monkeypatch: pytest.MonkeyPatch) -> FrameworkSpec:
    monkeypatch.setitem(frameworks.FRAMEWORK_TABLE, TOY_FRAMEWORK.name, TOY_FRAMEWORK)
    return TOY_FRAMEWORK


def _sweep_parser() -> argparse.ArgumentParser:
    p = StrictParser(prog="sweep plan")
    add_grid_options(p)
    return p


def _sweep(argv: list[str]) -> argparse.Namespace:
    return _sweep_parser().parse_args(argv)


def _help(p: argparse.ArgumentParser) -> str:
    return " ".join(p.format_help().split())  # argparse wraps lines; compare on single spaces


def test_the_toys_are_absent_without_their_registration():
    assert "toy" not in methods.method_names() and "toyset" not in datasets.dataset_names()
    assert "toyfw" not in frameworks.framework_names()
    assert not {m for m, _, _ in grid_configurations()} & {"toy"}
    with pytest.raises(UsageError, match="unknown method 'toy'"):
        job_parser().parse_args([*JOB[:3], "toy", *JOB[4:]])


def test_a_method_is_one_registration(toy_method):
    grid = [(m, c, t) for m, c, t in grid_configurations() if m == "toy"]
    mapro = [(c, t) for m, c, t in grid_configurations() if m == "mapro"]  # same role, same topologies
    assert [(c, t) for _, c, t in grid] == mapro and mapro
    assert sum(c.method == "toy" for c in protocol_grid()) == len(mapro)
    assert sum(e["grid"]["method"] == "toy" for e in grid_cells()) == len(mapro)
    assert method_rng_seed("toy", 2) == 79 and methods.rng_bases()["toy"] == 77
    args = job_parser().parse_args([*JOB[:3], "toy", *JOB[4:]])
    assert args.method == "toy" and "toy: a toy method of the registration test" in _help(job_parser())
    jobs = planned_jobs(_sweep(["--methods", "toy", "--tasks", "bfcl", "--frameworks", "langgraph", "--runtime",
                                "native"]))
    assert jobs and {j.method for j in jobs} == {"toy"} and all(j.runnable for j in jobs)
    assert "toy" in _help(_sweep_parser())
    assert registry.uses_reflection("toy") and registry.task_model_components("toy") == ("judge",)
    built = registry.get_optimizer("toy", seed=1, judge="judge-client")
    assert isinstance(built, ToyMethod) and (built.seed, built.judge) == (1, "judge-client")
    assert "toy_rank" in judge_tasks() and unscripted_judge_tasks() == ("toy_rank",)
    judge = SimJudge((), lambda _: None)
    assert judge.reply("<judge_task>toy_rank</judge_task>\nrate it") == "Score: 5"  # no scripted verdict yet


def test_a_dataset_is_one_registration(toy_dataset, tmp_path):
    cell = parse_cell("task=toyset,topology=centralized")
    assert cell.task == "toyset" and registry_key(cell) == "centralized"
    toy = [(m, c, t) for m, c, t in grid_configurations() if c.task == "toyset"]
    bfcl = [(m, c.model_copy(update={"task": "toyset"}), t) for m, c, t in grid_configurations() if c.task == "bfcl"]
    assert toy == bfcl  # an application task, as bfcl: tables 2-7
    assert sum(c.task == "toyset" for c in protocol_grid()) == len(toy)
    assert sum(e["grid"]["task"] == "toyset" for e in grid_cells()) == len(toy)
    args = job_parser().parse_args([*JOB[:1], "task=toyset,topology=single", *JOB[2:], "--toy-corpus", "DIR"])
    assert dataset_options(args) == {"toy_corpus": "DIR"}
    assert "Toy corpus: --toy-corpus DIR the toy dataset's corpus" in _help(job_parser())
    with pytest.raises(UsageError, match="--toy-corpus applies only to task=toyset, not task=bfcl"):
        configure_benchmark(_Named("bfcl"), {"toy_corpus": "DIR"}, None)  # type: ignore[arg-type]
    jobs = planned_jobs(_sweep(["--tasks", "toyset", "--methods", "gepa", "--data-dir", f"toyset={tmp_path}"]))
    assert jobs and all(j.data_dir == str(tmp_path) for j in jobs)
    assert data_dirs([f"toyset={tmp_path}"]) == {"toyset": str(tmp_path)}
    assert "toyset" in _help(_sweep_parser())
    from benchmarks.registry import get_benchmark

    with pytest.raises(UsageError, match="benchmark 'toyset' is not implemented yet"):  # known, found by name
        get_benchmark("toyset")


class _Named:
    def __init__(self, name: str):
        self.name = name


def test_a_framework_is_one_registration(toy_framework):
    cell = parse_cell("task=bfcl,topology=sequential_toyfw")
    assert (cell.framework, cell.team_size, registry_key(cell)) == ("toyfw", 4, "sequential_toyfw")
    with pytest.raises(CellError, match="framework=toyfw runs only topology=sequential"):
        parse_cell("task=bfcl,topology=centralized,framework=toyfw")
    assert with_framework("task=bfcl,topology=sequential", "toyfw").endswith("framework=toyfw")
    args = job_parser().parse_args([*JOB, "--framework", "toyfw"])
    assert args.framework == "toyfw" and "toyfw" in _help(job_parser())
    assert runtime_implementation_id("toyfw") == "mas-promptbench-engine/toyfw-gateway-v1"
    assert install_hint("toyfw") == "pip install 'mas-promptbench[toyfw]'"
    assert "the `toyfw` extra" in (missing_extra("toyfw") or "")
    with pytest.raises(UsageError, match="framework=toyfw"):
        build_topology(cell, contract_version=2)
    assert framework_keys()["toyfw"] == "sequential_toyfw"
    assert {c.topology for c in protocol_cells() if c.framework == "toyfw"} == {"sequential"}
    assert _sweep(["--frameworks", "toyfw"]).frameworks == ("toyfw",) and "toyfw" in _help(_sweep_parser())
    from engine.sweep.plan import Filters, check_filters

    check_filters(Filters(frameworks=("toyfw",)))  # a known framework label (it claims no table: no job)


def test_every_method_the_judge_is_asked_about_has_a_scripted_verdict():
    assert unscripted_judge_tasks() == ()  # a new method's judge kinds need a verdict in SimJudge.VERDICTS


def test_every_synthetic_grid_cell_is_one_the_parser_accepts():
    for entry in grid_cells():
        g = entry["grid"]
        text = (f"task={g['task']},topology={g['topology']},framework={g['framework']},"
                f"communication={g['communication']},team_size={g['team_size']},model={g['task_model']}")
        assert registry_key(parse_cell(text)) == entry["registry_key"]
