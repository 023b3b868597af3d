"""A third-party agent served over stdio with ``acp.run_agent(with_progress(agent))``, as its author
would: ``python tests/agents/wrapped_agent.py [--bare] [--think-after S] KIND [ARGS ...]``.

KIND is ``echo`` or ``example`` (the ACP Python SDK's own example agents), ``slow``/``slow-tool``/
``slow-raise`` (:class:`tests.agents.slow_agent.SlowAgent`, silent ARGS[0] seconds), ``pydantic`` (a
pydantic-acp agent whose model thinks ARGS[0] seconds) or ``scripted`` (the relay tests' scripted
agent; ARGS are its MODE ARG EXTRA, e.g. ``scripted paced 300 2`` for the benchmarks). ``--bare``
serves the agent unwrapped. The heartbeat comes from the settings (``ACP_PROGRESS_HEARTBEAT_INTERVAL``),
as for the relay.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent / "sdk_examples"))

from acp import run_agent

from acp_adapter import with_progress


def make_agent(kind: str, args: list[str]) -> Any:
    delay = float(args[0]) if args and kind != "scripted" else 0.0
    if kind == "scripted":
        from tests.agents.scripted_agent import ScriptedAgent

        mode, arg, extra = [*args, None, None, None][:3]
        return ScriptedAgent(mode or "stream", arg, extra)
    if kind == "echo":
        from echo_agent import EchoAgent

        return EchoAgent()
    if kind == "example":
        from example_agent import ExampleAgent

        return ExampleAgent()
    if kind == "pydantic":
        from tests.agents.slow_agent import pydantic_agent

        return pydantic_agent(delay)
    from tests.agents.slow_agent import SlowAgent

    script = kind.removeprefix("slow").removeprefix("-") or "answer"
    return SlowAgent(delay, script=script)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bare", action="store_true")
    parser.add_argument("--think-after", type=float, default=0.5)
    parser.add_argument("kind")
    parser.add_argument("args", nargs="*")
    args = parser.parse_args()
    agent = make_agent(args.kind, args.args)
    served = agent if args.bare else with_progress(agent, think_after=args.think_after)
    asyncio.run(run_agent(served))


if __name__ == "__main__":
    main()
