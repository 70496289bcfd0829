"""The official A2A Python SDK's client against a served toolnexus agent.

Usage: sdk_client.py BASE_URL TEXT
Resolves the Agent Card at BASE_URL, sends TEXT (non-streaming), polls the
task with GetTask until it leaves submitted/working (30 s at most) and
prints one JSON line: {"binding", "protocolVersion", "state", "text",
"sendState"}.
"""

import asyncio
import json
import sys
import time
import uuid

from a2a.client import ClientConfig, create_client
from a2a.types import GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState


async def main(base: str, text: str) -> None:
    client = await create_client(base, ClientConfig(streaming=False))
    iface = client._card.supported_interfaces[0]
    request = SendMessageRequest(
        message=Message(
            role=Role.ROLE_USER,
            message_id=str(uuid.uuid4()),
            parts=[Part(text=text)],
        )
    )
    task = None
    async for event in client.send_message(request):
        if event.HasField("task"):
            task = event.task
    if task is None:
        raise SystemExit("no task in the SendMessage answer")
    send_state = TaskState.Name(task.status.state)
    deadline = time.monotonic() + 30
    pending = (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
    while task.status.state in pending:
        if time.monotonic() > deadline:
            raise SystemExit(f"task {task.id} did not settle")
        await asyncio.sleep(0.02)
        task = await client.get_task(GetTaskRequest(id=task.id))
    texts = [p.text for a in task.artifacts for p in a.parts if p.text]
    if not texts and task.status.HasField("message"):
        texts = [p.text for p in task.status.message.parts if p.text]
    print(
        json.dumps(
            {
                "binding": iface.protocol_binding,
                "protocolVersion": iface.protocol_version,
                "sendState": send_state,
                "state": TaskState.Name(task.status.state),
                "text": "\n".join(texts),
            }
        )
    )
    await client.close()


asyncio.run(main(sys.argv[1], sys.argv[2]))
