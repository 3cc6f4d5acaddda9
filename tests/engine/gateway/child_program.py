"""An external program that knows nothing of the engine: plain OpenAI clients from the environment."""

import os
import sys

import openai

suffix = os.environ.get("CHILD_SUFFIX", "")
planner = openai.OpenAI(max_retries=0)  # OPENAI_BASE_URL / OPENAI_API_KEY from the gateway
for step in range(2):
    reply = planner.chat.completions.create(model="anything", temperature=1.3,
                                            messages=[{"role": "user", "content": f"plan step {step}{suffix}"}])
    print("planner:", reply.choices[0].message.content is not None)
solver = openai.OpenAI(base_url=os.environ["MPB_GATEWAY_URL_SOLVER"], max_retries=0)
reply = solver.chat.completions.create(model="anything", messages=[{"role": "user", "content": "solve"}])
print("solver:", reply.choices[0].message.content is not None)
sys.exit(int(os.environ.get("CHILD_EXIT", "0")))
