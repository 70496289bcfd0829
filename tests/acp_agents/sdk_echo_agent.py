#!/usr/bin/env python3
"""An echo agent on the official ACP Python SDK (`agent-client-protocol`,
pinned in tests/requirements.txt): each prompt's text comes back as
`ECHO[<last line of text>]` in one message chunk, after a thought chunk.
With ACP_PID_FILE in the environment it writes its pid there first."""
import asyncio
import os

from acp import Agent, InitializeResponse, NewSessionResponse, PromptResponse, run_agent
from acp import update_agent_message_text, update_agent_thought_text


class Echo(Agent):
    def on_connect(self, conn):
        self.conn = conn

    async def initialize(self, protocol_version, client_capabilities=None, client_info=None, **kw):
        return InitializeResponse(protocol_version=protocol_version)

    async def new_session(self, cwd, mcp_servers=None, **kw):
        return NewSessionResponse(session_id="echo-1")

    async def prompt(self, prompt, session_id, **kw):
        text = "".join(getattr(block, "text", "") for block in prompt)
        await self.conn.session_update(session_id, update_agent_thought_text("thinking..."))
        await self.conn.session_update(session_id, update_agent_message_text("ECHO[" + text.splitlines()[-1] + "]"))
        return PromptResponse(stop_reason="end_turn")


if os.environ.get("ACP_PID_FILE"):
    with open(os.environ["ACP_PID_FILE"], "w") as f:
        f.write(str(os.getpid()))
asyncio.run(run_agent(Echo()))
