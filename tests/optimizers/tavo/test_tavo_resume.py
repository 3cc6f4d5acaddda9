"""TAVO: kill -9 at a seeded random point of optimization on a 4-agent BFCL team (the MAPRO / MASPO resume test,
tests/optimizers/test_resume_team.py), re-run: the same incumbent, curve and selection as an uninterrupted run,
the same per-component usage, and no task, judge or reflection request recorded before the kill sent again."""

from __future__ import annotations

import random

import pytest

from tests.optimizers.test_resume_team import test_kill9_during_team_optimization_then_rerun_equals_uninterrupted as kill9

pytestmark = pytest.mark.slow


def test_kill9_during_tavo_optimization_then_rerun_equals_uninterrupted(tmp_path):
    # after the seed's validation batch (50 rollouts x 4 calls) and the first train batch: judge calls recorded
    kill9(tmp_path, "tavo", (300, 600), random.Random(23).randint(0, 10**6))
