"""Smoke runs (`job --smoke N`, `sweep run --smoke N`): every phase end to end on a few rows, in minutes.

A smoke run takes the first N rows of each split in split order (train, validation, test: deterministic, the same
rows every time) and, unless --budget is given, its method's smallest budget for those sizes (protocol 8.9,
optimizers.registry.smallest_budget; at least 1). It is never a protocol result:

* job.json carries `smoke: {"rows_per_split": N}` (only a smoke job has the field, so an ordinary job.json is
  unchanged) and `smoke_run` among its nonconformance_reasons, so `aggregate` skips it unless
  --include-nonconformant; the card's mpb.job annotation carries both;
* its split hash is that of the truncated splits, so its cell id and condition differ from the full job's: a smoke
  --out is never resumed as a full job nor the reverse (check_out_dir refuses in one line naming `smoke`), and a
  shared evaluation cache never mixes the two;
* the stdout summary line says `"smoke": N`, the progress lines start with `[smoke N] `.

Decision: N larger than a split is refused (exit 2, one line naming the split and its size), not clamped: a run
labelled "N rows per split" holds exactly N rows of every split.
"""

from __future__ import annotations

from dataclasses import replace

from core.benchmark import Splits
from core.errors import UsageError
from core.protocol import FULL_BUDGET
from engine.job.config import JobConfig
from engine.log import get_logger

SMOKE_REASON = "smoke_run"
SPLITS = ("train", "validation", "test")

log = get_logger("engine.job")


def smoke_splits(splits: Splits, rows: int) -> Splits:
    """The first `rows` IDs of every split, in split order; a split shorter than that is refused."""
    for name in SPLITS:
        have = len(splits.ids(name))
        if rows > have:
            raise UsageError(f"--smoke {rows} is larger than the {name} split of task={splits.dataset} ({have} rows); "
                             f"use --smoke {min(len(splits.ids(s)) for s in SPLITS)} or less")
    return replace(splits, train=splits.train[:rows], validation=splits.validation[:rows], test=splits.test[:rows],
                   eval_ids=splits.eval_ids[:rows])


def smoke_budget(cfg: JobConfig, least: int) -> JobConfig:
    """A smoke job without --budget runs at its method's smallest budget for the smoke splits (`least`)."""
    if cfg.smoke is None or cfg.budget_given:
        return cfg
    return replace(cfg, budget=max(1, min(FULL_BUDGET, least)), budget_given=True)


def announce(cfg: JobConfig, least: int) -> None:
    """One line saying what a smoke run is (shown under --quiet too: it is why the result is not a result)."""
    if cfg.smoke is None:
        return
    log.warning(f"smoke run: every phase on the first {cfg.smoke} rows of each split (train, validation, test), "
                f"budget {cfg.budget} ({cfg.method}'s smallest for {cfg.smoke} train / {cfg.smoke} validation rows "
                f"is {least}); non-conformant (smoke_run): aggregate skips it unless --include-nonconformant",
                kind="smoke", rows_per_split=cfg.smoke, budget=cfg.budget, smallest_budget=least)


def progress_prefix(cfg: JobConfig) -> str:
    return "" if cfg.smoke is None else f"[smoke {cfg.smoke}] "
