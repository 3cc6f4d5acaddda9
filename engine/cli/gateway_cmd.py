"""`python -m engine gateway`: record any OpenAI-client program into a rollout-card stream, unchanged.

    python -m engine gateway --task-endpoint URL --model-id M --out DIR [--roles planner,solver] [--members 1]
                             [--name external] [--seed 0] [--decoding evaluation|optimization] -- COMMAND ...

The engine serves its recording gateway on 127.0.0.1 and runs COMMAND with, for each role r and member m, the
variable MPB_GATEWAY_URL_<R>_<M> (and MPB_GATEWAY_URL_<R> for member 0) set to that agent's base URL; the first
role's member 0 is also OPENAI_BASE_URL, and OPENAI_API_KEY is the gateway's placeholder key (the real endpoint's
key stays in this process). Every call is recorded into DIR/card.sqlite like a native agent turn: the seed per
(rollout, role, member, turn), the protocol's decoding (`--decoding`, evaluation = greedy by default) in place
of what the program asked (kept as `framework_params`), usage, latency. Re-running the same command into the same
DIR replays every recorded call instead of sending it again (a request that differs from the recorded one is
flagged `replay_mismatch`). Without COMMAND the gateway serves until interrupted and prints the URLs.
Exit code: COMMAND's; 2 for bad input; 1 when COMMAND succeeded but a model call failed upstream.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

import anyio

from core.errors import UsageError
from core.protocol import EVALUATION_DECODING, OPTIMIZATION_DECODING
from core.seeds import request_seed
from core.vocabulary import Actor, NodeStatus
from engine.agent_context import RecordedAgentContext
from engine.chat.auth import DEFAULT_API_KEY_ENV
from engine.args import StrictParser, check_out_directory, int_in, positive_float
from engine.gateway.server import Gateway
from engine.gateway.session import RolloutSession
from engine.job.endpoints import open_task_pool
from engine.store import Store

ROLE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
DECODINGS = {"evaluation": EVALUATION_DECODING, "optimization": OPTIMIZATION_DECODING}


@dataclass(frozen=True)
class GatewayArgs:
    endpoint: str
    model_id: str
    out: Path
    roles: tuple[str, ...]
    members: int
    name: str
    seed: int
    decoding: str
    request_timeout: float
    api_key_env: str
    command: tuple[str, ...]


def parse(argv: Sequence[str]) -> GatewayArgs:
    argv = list(argv)
    command: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, command = argv[:cut], argv[cut + 1:]
    p = StrictParser(prog="engine gateway", description="Record an OpenAI-client program's model calls into a "
                     "rollout-card stream (see the module docstring).")
    p.add_argument("--task-endpoint", required=True, help="the OpenAI-compatible endpoint's base URL (.../v1)")
    p.add_argument("--model-id", required=True, help="the model the endpoint serves")
    p.add_argument("--out", required=True, help="directory for card.sqlite")
    p.add_argument("--roles", default="agent", help="comma list of role names (default: agent)")
    p.add_argument("--members", type=int_in("--members", 1, 64), default=1, help="members per role")
    p.add_argument("--name", default="external", help="the rollout's name (its seed derives from it)")
    p.add_argument("--seed", type=int_in("--seed", 0, 2**31 - 1), default=0, help="the rollout's base seed")
    p.add_argument("--decoding", choices=tuple(DECODINGS), default="evaluation")
    p.add_argument("--request-timeout", type=positive_float("--request-timeout"), default=600.0)
    p.add_argument("--api-key-env", default=DEFAULT_API_KEY_ENV, help="variable holding the endpoint's key")
    args = p.parse_args(argv)
    roles = tuple(r.strip() for r in args.roles.split(",") if r.strip())
    if not roles or any(not ROLE_NAME.match(r) for r in roles) or len(set(roles)) != len(roles):
        raise UsageError(f"--roles must be distinct names of letters, digits and _, got {args.roles!r}")
    if not ROLE_NAME.match(args.name):
        raise UsageError(f"--name must be letters, digits and _, got {args.name!r}")
    out = Path(args.out)
    check_out_directory(out, "--out")
    if command and shutil.which(command[0]) is None:
        raise UsageError(f"cannot start {command[0]!r}: not an executable program")
    return GatewayArgs(endpoint=args.task_endpoint, model_id=args.model_id, out=out, roles=roles,
                       members=args.members, name=args.name, seed=args.seed, decoding=args.decoding,
                       request_timeout=args.request_timeout, api_key_env=args.api_key_env, command=tuple(command))


def agent_environment(session: RolloutSession, a: GatewayArgs) -> dict[str, str]:
    env: dict[str, str] = {}
    for role in a.roles:
        for member in range(a.members):
            link = session.agent(role, member)
            env[f"MPB_GATEWAY_URL_{role.upper()}_{member}"] = link.base_url
            if member == 0:
                env[f"MPB_GATEWAY_URL_{role.upper()}"] = link.base_url
                if role == a.roles[0]:
                    env.update(OPENAI_BASE_URL=link.base_url, OPENAI_API_KEY=link.api_key)
    return env


async def serve(a: GatewayArgs) -> int:
    a.out.mkdir(parents=True, exist_ok=True)
    async with AsyncExitStack() as stack:
        pool, _ = await open_task_pool(stack, [a.endpoint], task="", data_dir=None, model_id=a.model_id,
                                       concurrency=64, request_timeout=a.request_timeout, api_key_env=a.api_key_env)
        store = await stack.enter_async_context(Store(a.out / "card.sqlite", run_id=f"gateway/{a.name}"))
        gateway = await stack.enter_async_context(Gateway())
        run_node, rollout_node = f"run/gateway/{a.name}", f"run/gateway/{a.name}/rollout"
        await store.add_node(node_id=run_node, parent_id=None, instance_key=a.name, task_key="gateway",
                             status=NodeStatus.RUNNING, worker_key=None, level=0, actor=Actor.RUN)
        await store.add_node(node_id=rollout_node, parent_id=run_node, instance_key=a.name, task_key="external",
                             status=NodeStatus.RUNNING, worker_key=None, level=1, actor=Actor.RUNNER)
        ctx = RecordedAgentContext(store=store, pool=pool, rollout_node=rollout_node,
                                   execution_id=f"{rollout_node}#g{store.generation}",
                                   rollout_seed=request_seed(a.seed, f"gateway/{a.name}", "external", 0, a.name, "rollout", 0),
                                   decoding=DECODINGS[a.decoding], tool_executor=None, gateway=gateway)
        code, failure = 0, None
        try:
            async with gateway.session(ctx, "external") as session:
                env = agent_environment(session, a)
                for key, url in sorted(env.items()):
                    if key.startswith("MPB_GATEWAY_URL_"):
                        print(f"{key}={url}", file=sys.stderr if a.command else sys.stdout, flush=True)
                code = await _run(a.command, env) if a.command else await _serve_forever()
        except Exception as exc:  # an upstream failure the program saw as a 502; recorded on the node
            failure = exc
        status = NodeStatus.COMPLETED if failure is None and code == 0 else NodeStatus.FAILED
        reason = None if failure is None else f"{type(failure).__name__}: {failure}"
        for node in (rollout_node, run_node):
            await store.set_node_status(node, status, actor=Actor.RUN, reason=reason)
        print(f"gateway: {ctx.recorder.live_calls} model calls sent, {ctx.recorder.replayed_calls} replayed, recorded "
              f"in {a.out / 'card.sqlite'}" + (f"; upstream failure: {failure}" if failure else ""), file=sys.stderr)
        return code if code != 0 else (1 if failure is not None else 0)


async def _run(command: tuple[str, ...], env: dict[str, str]) -> int:
    try:
        process = await anyio.open_process(list(command), env={**os.environ, **env}, stdin=None, stdout=None,
                                           stderr=None)
    except OSError as exc:
        raise UsageError(f"cannot start {command[0]!r}: {exc.strerror or exc}") from None
    async with process:
        return await process.wait()


async def _serve_forever() -> int:
    await anyio.sleep_forever()
    return 0


def main(argv: Sequence[str]) -> int:
    return anyio.run(serve, parse(argv))
