"""The method table: one entry per optimization method; every list of methods is derived from it.

Adding a method is its package under optimizers/ plus ONE `MethodSpec` in `METHOD_TABLE`. The grid (core/grid.py),
the logical RNG seeds (core/seeds.py), the optimizer registry (optimizers/registry.py), the CLI choices and help
texts (engine/cli/job_cmd.py, engine/sweep/cli.py) and the simulated judge's tags (engine/sim/judge.py) read it.

Why the table is data in core and not in optimizers/registry.py: core/grid.py and core/seeds.py need the grid roles
and RNG bases, and core imports nothing of ours (tests/test_layering.py). So the entry names its implementation as
a `"module:attribute"` string that optimizers/registry.py imports lazily, as benchmarks/registry.py finds a dataset
package by name; there is no second table to keep in step. A test registers a toy method by patching this one dict
(tests/test_registration.py) and checks that every derived list picks it up.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from core.errors import UsageError
from core.frameworks import honours_member_masks


class GridRole(enum.StrEnum):
    """Which of protocol section 4's tables a method's column is in."""

    PRIMARY = "primary"  # PRIMARY_METHODS: tables 2-7
    EXTENDED = "extended"  # ALL_METHODS but not PRIMARY: table 6 only
    BASELINE = "baseline"  # in no table's method column; runs on any grid condition and claims the tables of the
    #                        searching methods that contain it (identity, section 4)
    OFF_GRID = "off_grid"  # a method outside protocol v1's grid: runs only with --allow-any-cell


@dataclass(frozen=True)
class MethodOption:
    """A named option of a method (`--method-option NAME=VALUE`), passed to its factory as keyword `name`. Only
    `default` is protocol-conformant; any other value marks the job non-conformant (`method_option_NAME_VALUE`).
    `values` are the accepted spellings; `kwargs` maps each to the keyword value the factory receives."""

    name: str
    values: tuple[str, ...]
    default: str
    help: str
    kwargs: tuple[tuple[str, object], ...] = ()  # value -> keyword value when it is not the string itself

    def keyword(self, value: str) -> object:
        return dict(self.kwargs).get(value, value)


@dataclass(frozen=True)
class MethodSpec:
    """Everything the engine needs to know about a method before it builds one.

    `factory` is the `"module:attribute"` of the class (built with `seed=`, `reflection=` and one keyword per
    task-model component when `uses_reflection`, else without arguments); None for a method of the protocol's grid
    that this engine does not implement (its jobs are planned and listed as not implemented). `rng_base` + the
    optimizer seed seeds the method's own `random.Random` (core/seeds.py `method_rng_seed`; part of the protocol).
    `single_agent`: the grid also runs it on topology=single (section 4: only gepa and mipro). `judge_tasks`: the
    `<judge_task>KIND</judge_task>` tags its judge prompts carry (the simulated endpoint scripts a verdict per
    kind). `options`: its named options (MethodOption; non-conformant unless default). The smallest budget is the
    optimizer's own (core.optimizer `SizedBudget`, else `smallest_useful_budget`).
    """

    name: str
    help: str
    factory: str | None = None
    grid_role: GridRole = GridRole.OFF_GRID
    single_agent: bool = False
    rng_base: int = 0
    uses_reflection: bool = False
    task_model_components: tuple[str, ...] = ()
    judge_tasks: tuple[str, ...] = ()
    options: tuple[MethodOption, ...] = ()
    needs_member_masks: bool = False  # runs masked coalitions: refused on a runtime without member masks

    @property
    def implemented(self) -> bool:
        return self.factory is not None


_SPECS = (
    MethodSpec("identity", "no search, deploys the seed bundle (0 rollouts)", factory="optimizers.identity:Identity",
               grid_role=GridRole.BASELINE, single_agent=True),
    MethodSpec("gepa", "reflective Pareto prompt evolution, protocol 8.1", factory="optimizers.gepa:Gepa",
               grid_role=GridRole.PRIMARY, single_agent=True, uses_reflection=True),
    MethodSpec("mipro", "MIPROv2, bootstrapped demos and instructions under TPE, 8.2",
               factory="optimizers.mipro:Mipro", grid_role=GridRole.PRIMARY, single_agent=True, rng_base=9,
               uses_reflection=True),
    MethodSpec("mapro", "MAP assignment over per-role prompt pools judged by the task model, 8.3",
               factory="optimizers.mapro:Mapro", grid_role=GridRole.PRIMARY, uses_reflection=True,
               task_model_components=("judge", "probe"), judge_tasks=("node", "edge", "blame")),
    MethodSpec("maspo", "coordinate ascent over roles with a pairwise-judged beam, 8.4",
               factory="optimizers.maspo:Maspo", grid_role=GridRole.PRIMARY, uses_reflection=True,
               task_model_components=("judge",), judge_tasks=("pairwise",)),
    # --- hivemind (8.5): coalition masks, reflection only; plan 90001*s + hm_seed, row order 100003*s + hm_seed ---
    MethodSpec("hivemind", "HiveMind CG-OPO: Shapley credit over masked coalitions, appended lessons, 8.5",
               factory="optimizers.hivemind:HiveMind", grid_role=GridRole.EXTENDED, rng_base=0,
               uses_reflection=True, needs_member_masks=True),
    # --- end hivemind ---
    MethodSpec("mamut_gepa", "MAMUT on the gepa engine, 8.6, not implemented", grid_role=GridRole.EXTENDED),
    MethodSpec("maspob", "LinUCB over prompt combinations, 8.7, not implemented",
               grid_role=GridRole.EXTENDED),
    # --- tavo (8.8): its judge kind and its options ---
    MethodSpec("tavo", "TAVO / TRUCE: credited sub-trajectories, one shared verbalized-policy overlay, 8.8",
               factory="optimizers.tavo:Tavo", grid_role=GridRole.EXTENDED, rng_base=233, uses_reflection=True,
               task_model_components=("judge",), judge_tasks=("subtrajectory",),
               options=(MethodOption("mode", ("truce-release", "tavo-paper-reproduction", "tavo-hybrid"),
                                     "truce-release", "truce-release: one shared overlay; tavo-paper-reproduction: "
                                     "per-agent refinement; tavo-hybrid: both"),
                        MethodOption("credit", ("1", "0"), "1", "TAVO_CREDIT: 0 = the no-credit ablation",
                                     kwargs=(("1", True), ("0", False))))),
    # --- end tavo ---
)
# THE registration: name -> spec, in the protocol's order (the grid's and the CLI's orders follow it)
METHOD_TABLE: dict[str, MethodSpec] = {spec.name: spec for spec in _SPECS}


def method_spec(name: str) -> MethodSpec | None:
    return METHOD_TABLE.get(name)


def method_names() -> tuple[str, ...]:
    """Every registered method, implemented or not."""
    return tuple(METHOD_TABLE)


def implemented_methods() -> tuple[str, ...]:
    return tuple(name for name, spec in METHOD_TABLE.items() if spec.implemented)


def primary_methods() -> tuple[str, ...]:
    """Section 4's PRIMARY_METHODS (tables 2-7)."""
    return tuple(name for name, spec in METHOD_TABLE.items() if spec.grid_role is GridRole.PRIMARY)


def grid_methods() -> tuple[str, ...]:
    """Section 4's ALL_METHODS: the methods of the tables' method column (PRIMARY first, then table 6's others)."""
    return primary_methods() + tuple(name for name, spec in METHOD_TABLE.items()
                                     if spec.grid_role is GridRole.EXTENDED)


def rng_bases() -> dict[str, int]:
    """name -> RNG base of every registered method (core/seeds.py `method_rng_seed`)."""
    return {name: spec.rng_base for name, spec in METHOD_TABLE.items()}


def judge_tasks() -> tuple[str, ...]:
    """Every `<judge_task>` kind a registered method's judge prompts carry, in registration order."""
    return tuple(dict.fromkeys(kind for spec in METHOD_TABLE.values() for kind in spec.judge_tasks))


def methods_help(names: tuple[str, ...] | None = None) -> str:
    """`name (help)` for the given methods (default: the implemented ones), for the CLI's help texts."""
    chosen = implemented_methods() if names is None else names
    return "; ".join(f"{n}: {METHOD_TABLE[n].help}" for n in chosen if n in METHOD_TABLE)


def check_method(name: str) -> str:
    """An argparse type for `--method`: an implemented method's name, else a one-line UsageError listing them."""
    if name not in implemented_methods():
        raise UsageError(f"unknown method {name!r}; known methods: {', '.join(sorted(implemented_methods()))}")
    return name


def method_options(name: str, given: dict[str, str]) -> tuple[dict[str, object], list[str]]:
    """The factory keywords of `--method-option NAME=VALUE` pairs and the non-conformance reasons they bring (one
    per non-default value); a one-line UsageError for an unknown option or value."""
    spec = METHOD_TABLE.get(name)
    known = {o.name: o for o in (spec.options if spec else ())}
    kwargs: dict[str, object] = {}
    reasons = []
    for key, value in given.items():
        option = known.get(key)
        if option is None:
            raise UsageError(f"method {name!r} has no option {key!r}; options: {', '.join(known) or 'none'}")
        if value not in option.values:
            raise UsageError(f"method option {key}={value!r}: expected one of {', '.join(option.values)}")
        kwargs[key] = option.keyword(value)
        if value != option.default:
            reasons.append(f"method_option_{key}_{value}")
    return kwargs, reasons


def check_member_masks(method: str, framework: str, topology: str, claims: bool) -> None:
    """A method that runs masked coalitions needs a runtime that honours masks (framework and topology): else one
    line, a UsageError (exit 2)."""
    spec = METHOD_TABLE.get(method)
    if spec is None or not spec.needs_member_masks:
        return
    if not honours_member_masks(framework):
        raise UsageError(f"{method} needs coalition masking (optimizer_control), which the {framework} runtime does "
                         "not honour; run it with framework=native")
    if not claims:
        raise UsageError(f"{method} needs coalition masking (optimizer_control), which topology {topology} does not "
                         "honour")


def options_help() -> str:
    """`method: name=v1|v2 (default d)` of every registered method option, for the CLI's help."""
    found = [f"{spec.name}: {o.name}={'|'.join(o.values)} (default {o.default})"
             for spec in METHOD_TABLE.values() for o in spec.options]
    return "; ".join(found) or "none"
