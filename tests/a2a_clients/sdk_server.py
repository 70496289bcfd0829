"""An agent on the official A2A Python SDK's server, for our outbound tool.

Usage: sdk_server.py
Binds 127.0.0.1 on a free port, prints "PORT <n>" and serves until killed:
the card at /.well-known/agent-card.json (a 1.0 card named "sdkagent" with
one skill "echo") and JSON-RPC at / (1.0, and 0.3 through the SDK's compat
layer). A task's text containing "fail" fails with the message "boom";
any other completes with the artifact text "SDK: <text>".
"""

import asyncio
import socket
import sys

import uvicorn
from starlette.applications import Starlette

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers.default_request_handler_v2 import DefaultRequestHandlerV2
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Task,
    TaskState,
    TaskStatus,
)


class Echo(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if context.current_task is None:
            await event_queue.enqueue_event(
                Task(
                    id=context.task_id,
                    context_id=context.context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                )
            )
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work()
        await asyncio.sleep(0.1)
        text = context.get_user_input()
        if "fail" in text:
            await updater.failed(updater.new_agent_message([Part(text="boom")]))
            return
        await updater.add_artifact([Part(text=f"SDK: {text}")])
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise RuntimeError("not cancelable")


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    # Listening before the port is told: a connection waits in the backlog
    # until the server accepts.
    sock.listen(128)
    port = sock.getsockname()[1]
    card = AgentCard(
        name="sdkagent",
        description="an a2a-sdk agent",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url=f"http://127.0.0.1:{port}/",
                protocol_binding="JSONRPC",
                protocol_version="1.0",
            )
        ],
        capabilities=AgentCapabilities(streaming=False, push_notifications=False),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=[AgentSkill(id="echo", name="echo", description="Echoes the task", tags=["echo"])],
    )
    handler = DefaultRequestHandlerV2(Echo(), InMemoryTaskStore(), card)
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(
        handler, "/", enable_v0_3_compat=True
    )
    app = Starlette(routes=routes)
    print(f"PORT {port}", flush=True)
    config = uvicorn.Config(app, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


main()
sys.exit(0)
