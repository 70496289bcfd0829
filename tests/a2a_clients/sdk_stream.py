"""The official A2A Python SDK's streaming client against a served agent.

Usage: sdk_stream.py BASE_URL TEXT [cancel]
Resolves the Agent Card at BASE_URL, sends TEXT with the SDK's streaming
call (message/stream on a 0.3 card, SendStreamingMessage on a 1.0 card) and
reads every event until the stream ends (60 s at most). With `cancel`, it
cancels the task through the SDK once the first `working` update arrives,
and reads on. Prints one JSON line: {"protocolVersion", "events": [{"kind":
"task"|"status"|"artifact", "state"?, "text"}], "canceled"?: <the state the
cancel answered>, "after": <the state GetTask gives after the stream>}.
"""

import asyncio
import json
import sys
import uuid

from a2a.client import ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)


def texts(parts) -> str:
    return "".join(p.text for p in parts if p.text)


async def main(base: str, text: str, cancel: bool) -> None:
    client = await create_client(base, ClientConfig(streaming=True))
    iface = client._card.supported_interfaces[0]
    request = SendMessageRequest(
        message=Message(
            role=Role.ROLE_USER,
            message_id=str(uuid.uuid4()),
            parts=[Part(text=text)],
        )
    )
    events = []
    out = {"protocolVersion": iface.protocol_version, "events": events}
    task_id = None

    async def read() -> None:
        nonlocal task_id
        async for event in client.send_message(request):
            if event.HasField("task"):
                task_id = event.task.id
                events.append(
                    {"kind": "task", "state": TaskState.Name(event.task.status.state)}
                )
            elif event.HasField("status_update"):
                update = event.status_update
                task_id = update.task_id or task_id
                state = TaskState.Name(update.status.state)
                events.append(
                    {
                        "kind": "status",
                        "state": state,
                        "text": texts(update.status.message.parts),
                    }
                )
                if cancel and state == "TASK_STATE_WORKING" and "canceled" not in out:
                    out["canceled"] = "asked"
                    answer = await client.cancel_task(CancelTaskRequest(id=task_id))
                    out["canceled"] = TaskState.Name(answer.status.state)
            elif event.HasField("artifact_update"):
                events.append(
                    {"kind": "artifact", "text": texts(event.artifact_update.artifact.parts)}
                )
            elif event.HasField("message"):
                events.append({"kind": "message", "text": texts(event.message.parts)})

    await asyncio.wait_for(read(), 60)
    if task_id:
        task = await client.get_task(GetTaskRequest(id=task_id))
        out["after"] = TaskState.Name(task.status.state)
    print(json.dumps(out))
    await client.close()


asyncio.run(main(sys.argv[1], sys.argv[2], len(sys.argv) > 3 and sys.argv[3] == "cancel"))
