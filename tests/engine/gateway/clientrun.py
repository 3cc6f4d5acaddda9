"""A framework runtime made of the plain OpenAI client (a test double of a framework): one solver, through the
recording gateway, with sampling parameters the gateway must override."""

from __future__ import annotations

from typing import Any

import openai

from core.benchmark import Benchmark
from core.contracts import wrap_answering_prompt
from core.models import AgentOutput, PromptBundle, Row


class ClientSingle:
    name = "single"
    framework = "openai_client"

    def __init__(self, requests: list[dict[str, Any]] | None = None, stream: bool = False):
        self.stream = stream

    def roles(self, task: str, team_size: int) -> list[str]:
        return ["solver"]

    async def run(self, row: Row, bundle: PromptBundle, ctx: Any, bench: Benchmark) -> AgentOutput:
        async with ctx.gateway(self.framework) as gw:
            link = gw.agent("solver", 0)
            async with openai.AsyncOpenAI(base_url=link.base_url, api_key=link.api_key, max_retries=0) as client:
                system = wrap_answering_prompt(bundle.roles["solver"], bench.contract(1), version=1)
                messages = [{"role": "system", "content": system}, {"role": "user", "content": bench.render_task(row)}]
                if self.stream:
                    text = ""
                    stream = await client.chat.completions.create(model=link.model, messages=messages,
                                                                  temperature=1.7, stream=True)
                    async for chunk in stream:
                        if chunk.choices and chunk.choices[0].delta.content:
                            text += chunk.choices[0].delta.content
                else:
                    reply = await client.chat.completions.create(model=link.model, messages=messages,
                                                                 temperature=1.7, top_p=0.3, max_tokens=7, seed=99)
                    text = reply.choices[0].message.content or ""
        return AgentOutput(text=text, selected_member=0)
