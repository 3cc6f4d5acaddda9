"""What every phase of one job works with, wired once by engine.job.run_job."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.artifacts import JobIdentity
from core.benchmark import Benchmark
from core.ledger import BudgetLedger
from core.models import PromptBundle
from core.optimizer import Optimizer
from engine.job.config import JobConfig
from engine.job.data import JobData
from engine.job.evaluation import Evaluator
from engine.job.late_clients import LateClient
from engine.progress import Progress
from engine.runner import Runner
from engine.store import Store


@dataclass
class JobContext:
    cfg: JobConfig
    identity: JobIdentity
    bench: Benchmark
    topology: Any
    optimizer: Optimizer
    data: JobData
    seed_bundle: PromptBundle
    store: Store
    run_node: str
    ledger: BudgetLedger
    runner: Runner
    evaluator: Evaluator
    # the optimizer's model clients (reflection, judge, probe), bound to recorded clients when optimization runs
    clients: dict[str, LateClient] = field(default_factory=dict)
    progress: Progress | None = None  # the progress lines; counts the rollouts replayed from the store

    @property
    def out(self) -> Path:
        return self.cfg.out

    @property
    def cell_id(self) -> str:
        return self.identity.cell_id
