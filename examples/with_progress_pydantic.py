"""A pydantic-ai agent served over ACP by pydantic-acp, with a Thinking... card while its model
thinks: ``with_progress`` wraps the adapter that ``create_acp_agent`` returns.

    pip install 'acp-progress[pydantic-acp]'
    acp-progress watch --agent "python examples/with_progress_pydantic.py" "hello"

The model here is pydantic-ai's ``FunctionModel`` thinking ``EXAMPLE_THINK_SECONDS`` (default 5)
before it streams, so the example runs offline; put any pydantic-ai model in its place.
"""

import asyncio
import os
from typing import Any

from acp import run_agent
from pydantic_acp import create_acp_agent
from pydantic_ai import Agent
from pydantic_ai.models.function import AgentInfo, FunctionModel

from acp_adapter import with_progress

THINK_SECONDS = float(os.environ.get("EXAMPLE_THINK_SECONDS", "5"))


async def slow_model(messages: list[Any], info: AgentInfo) -> Any:
    await asyncio.sleep(THINK_SECONDS)  # the model thinks; the person sees the card meanwhile
    yield "Done thinking."


agent = Agent(FunctionModel(stream_function=slow_model), name="slow")

if __name__ == "__main__":
    asyncio.run(run_agent(with_progress(create_acp_agent(agent))))
