"""Team specs: roles per dataset, topology and team size, as data (topologies/teams/<dataset>.json).

Schema of one file (every text is sent to the model verbatim):

    {"dataset": "<ds>",
     "independent":   {"role": "solver", "step_limit": 15},
     "decentralized": {"role": "debater", "rounds": 2, "step_limit": 6},
     "sequential":    {"step_limit": 25,
                       "stages": {"<role>": {"tools": bool, "task": "... {question} ..."}, ...},
                       "sizes": {"2": ["<role>", ...], "4": [...], "8": [...], "10": [...]}},
     "centralized":   {"mode": "delegation" | "report_round", "manager_tools": bool, "worker_step_limit": 15,
                       "workers": {"<worker>": {"tools": bool, "answers": bool, "description": "..."}, ...},
                       "sizes": {"<n>": {"manager": "manager", "max_turns": 16, "workers": ["<worker>", ...]}}}}

`tools` = the role is offered the dataset's native tools; `answers` = a centralized worker that produces the
final artifact and so carries the output contract. Stage order is the list order; the last stage answers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from core.cell import TEAM_SIZES
from core.errors import DataError, UsageError

TEAMS_DIR = Path(__file__).parent / "teams"
TASK_PLACEHOLDER = "{question}"


@dataclass(frozen=True)
class Stage:
    role: str
    tools: bool
    task: str

    def user_message(self, task_text: str) -> str:
        return self.task.replace(TASK_PLACEHOLDER, task_text)


@dataclass(frozen=True)
class Worker:
    name: str
    tools: bool
    answers: bool
    description: str


@dataclass(frozen=True)
class CentralizedTeam:
    manager: str
    workers: tuple[Worker, ...]
    max_turns: int
    manager_tools: bool
    worker_step_limit: int
    mode: str = "delegation"  # "report_round": each worker once, then one manager answer


@dataclass(frozen=True)
class TeamSpec:
    dataset: str
    data: dict[str, Any]

    def _section(self, topology: str) -> dict[str, Any]:
        try:
            return self.data[topology]
        except KeyError:
            raise DataError(f"team spec {self.dataset}.json has no {topology!r} section") from None

    @staticmethod
    def _size(sizes: dict[str, Any], n: int, where: str) -> Any:
        if str(n) not in sizes:
            raise DataError(f"team spec {where} has no team size {n}; sizes: {', '.join(sizes)}")
        return sizes[str(n)]

    def independent_role(self) -> str:
        return str(self._section("independent")["role"])

    def independent_step_limit(self) -> int:
        return int(self._section("independent").get("step_limit", 25))

    def debater_role(self) -> str:
        return str(self._section("decentralized")["role"])

    def rounds(self) -> int:
        return int(self._section("decentralized").get("rounds", 2))

    def debate_step_limit(self) -> int:
        return int(self._section("decentralized").get("step_limit", 6))

    def stages(self, n: int) -> tuple[Stage, ...]:
        section = self._section("sequential")
        roles = self._size(section["sizes"], n, f"{self.dataset}.sequential")
        defs = section["stages"]
        return tuple(Stage(role=r, tools=bool(defs[r]["tools"]), task=str(defs[r]["task"])) for r in roles)

    def stage_step_limit(self) -> int:
        return int(self._section("sequential").get("step_limit", 25))

    def centralized(self, n: int) -> CentralizedTeam:
        section = self._section("centralized")
        size = self._size(section["sizes"], n, f"{self.dataset}.centralized")
        defs = section["workers"]
        workers = tuple(Worker(name=w, tools=bool(defs[w]["tools"]), answers=bool(defs[w]["answers"]),
                               description=str(defs[w]["description"])) for w in size["workers"])
        return CentralizedTeam(manager=str(size["manager"]), workers=workers, max_turns=int(size["max_turns"]),
                               manager_tools=bool(section.get("manager_tools", True)),
                               worker_step_limit=int(section.get("worker_step_limit", 15)),
                               mode=str(section.get("mode", "delegation")))


@lru_cache(maxsize=None)
def team_spec(dataset: str) -> TeamSpec:
    path = TEAMS_DIR / f"{dataset}.json"
    if not path.is_file():
        raise DataError(f"no team spec for dataset {dataset!r} (expected topologies/teams/{dataset}.json)")
    return TeamSpec(dataset=dataset, data=json.loads(path.read_text(encoding="utf-8")))


def check_team_size(topology: str, team_size: int) -> int:
    if team_size not in TEAM_SIZES:
        raise UsageError(f"{topology} supports team sizes {TEAM_SIZES}, got {team_size}")
    return team_size
