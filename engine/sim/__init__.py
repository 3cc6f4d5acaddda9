"""The labelled simulated endpoint: a scripted, seed-deterministic OpenAI-compatible server on 127.0.0.1.

    policy.py      Policy: rows indexed by rendered task -> replies (the documented accuracy function)
    faults.py      FaultPlan / ScheduledFault: deterministic fault injection keyed by (request key, occurrence)
    requestlog.py  RequestLog: every request in arrival order, in memory and as JSON lines
    server.py      SimServer: aiohttp server (thread or in-loop), large listen backlog
    build.py       build_policy(tasks, data_dir, reflection_model) from benchmarks.registry
    cli.py         main(argv) for `python -m engine serve-sim`
    start.py       the in-process endpoint a job opens when given none (registered in engine/simulated.py)

Its scores are not model scores: every response is labelled (`X-Simulated-Endpoint: true`, `"simulated": true`).
"""

from engine.sim.faults import FAULT_KINDS, FaultPlan, RequestFacts, ScheduledFault, request_key
from engine.sim.policy import CONTRACT_MARKER, Policy
from engine.sim.requestlog import read_log_file
from engine.sim.server import SimServer
from engine.sim import start as _start  # noqa: F401  (importing the sim provides the job's simulated endpoint)

__all__ = [
    "CONTRACT_MARKER",
    "FAULT_KINDS",
    "FaultPlan",
    "Policy",
    "RequestFacts",
    "ScheduledFault",
    "SimServer",
    "read_log_file",
    "request_key",
]
