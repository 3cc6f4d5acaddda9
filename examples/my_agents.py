"""An agents program of your own, as `python -m engine gateway ... --roles planner,solver -- python
examples/my_agents.py` runs it: two plain OpenAI clients that know nothing of the engine.

The gateway sets, for each role (and member) it serves, `MPB_GATEWAY_URL_<ROLE>` (and `..._<ROLE>_<MEMBER>`) to that
agent's base URL, and `OPENAI_BASE_URL` / `OPENAI_API_KEY` to the first role's, so the default client is the planner.
Every call is recorded into `--out`'s card.sqlite with its seed per (rollout, role, member, turn) and the protocol's
decoding; the `model` field is the gateway's business (it sends `--model-id`), so any name does.

    python examples/my_agents.py ["a task"]     # outside the gateway it needs those variables set by hand
"""

from __future__ import annotations

import os
import sys

from openai import OpenAI

TASK = "What is 17 * 23? Give the number."


def ask(client: OpenAI, system: str, user: str) -> str:
    reply = client.chat.completions.create(model="any", messages=[{"role": "system", "content": system},
                                                                  {"role": "user", "content": user}])
    return reply.choices[0].message.content or ""


def main(task: str) -> int:
    planner = OpenAI(max_retries=0)  # OPENAI_BASE_URL and OPENAI_API_KEY: the first role's route (planner)
    solver = OpenAI(base_url=os.environ["MPB_GATEWAY_URL_SOLVER"], max_retries=0)
    plan = ask(planner, "You are the planner. Write a short numbered plan; do not solve the task.", task)
    answer = ask(solver, "You are the solver. Follow the plan and end with 'Answer: ...'.",
                 f"Task: {task}\n\nPlan:\n{plan}")
    print(f"planner: {len(plan)} characters; solver: {answer.strip().splitlines()[-1] if answer.strip() else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main(" ".join(sys.argv[1:]) or TASK))
