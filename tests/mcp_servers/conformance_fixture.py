#!/usr/bin/env python3
"""The MCP server the gateway fronts when the official conformance suite's
server scenarios run against `toolnexus serve --http`
(scripts/mcp_conformance.sh). Written on the official Python SDK's low-level
server, so every schema and content part goes out exactly as written here.

It has what the suite's server scenarios ask for by name: the tools
test_simple_text, test_image_content, test_audio_content,
test_embedded_resource, test_multiple_content_types, test_tool_with_logging,
test_error_handling, test_tool_with_progress, test_sampling, test_elicitation,
test_elicitation_sep1034_defaults, test_elicitation_sep1330_enums,
json_schema_2020_12_tool, test_reconnection; the resources test://static-text,
test://static-binary, test://watched-resource and the template
test://template/{id}/data; the prompts test_simple_prompt,
test_prompt_with_arguments, test_prompt_with_embedded_resource,
test_prompt_with_image; completion for prompt arguments; logging.

usage: conformance_fixture.py                      (stdio)
       conformance_fixture.py streamable-http PORT (PORT 0: a free one, printed as `PORT n`)
"""
import json
import sys
import warnings

import anyio
from mcp import types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

warnings.simplefilter("ignore")

# A 1x1 red PNG and a tiny WAV header, base64.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="

EMPTY = {"type": "object", "properties": {}}

TOOLS = [
    ("test_simple_text", "Answers one text part.", EMPTY),
    ("test_image_content", "Answers a PNG image.", EMPTY),
    ("test_audio_content", "Answers a WAV clip.", EMPTY),
    ("test_embedded_resource", "Answers an embedded text resource.", EMPTY),
    ("test_multiple_content_types", "Answers text, an image and a resource.", EMPTY),
    ("test_tool_with_logging", "Logs three messages while it runs.", EMPTY),
    ("test_error_handling", "Always fails.", EMPTY),
    ("test_tool_with_progress", "Reports progress 0, 50, 100 of 100.", EMPTY),
    (
        "test_sampling",
        "Asks the client's model.",
        {"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]},
    ),
    (
        "test_elicitation",
        "Asks the user for a username and email.",
        {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
    ),
    ("test_elicitation_sep1034_defaults", "Asks with a default for every field.", EMPTY),
    ("test_elicitation_sep1330_enums", "Asks with every kind of enum.", EMPTY),
    (
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": False,
        },
    ),
    ("test_reconnection", "Answers after a short pause.", EMPTY),
]

SEP1034 = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}

SEP1330 = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
    "required": [],
}


def text(t):
    return {"type": "text", "text": t}


def result(content, is_error=False):
    return types.CallToolResult.model_validate({"content": content, "isError": is_error})


async def elicit(ctx, message, schema):
    params = types.ElicitRequestFormParams.model_validate(
        {"mode": "form", "message": message, "requestedSchema": schema}
    )
    answer = await ctx.session.send_request(types.ElicitRequest(params=params), types.ElicitResult)
    return f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}"


async def list_tools(ctx, params):
    return types.ListToolsResult.model_validate(
        {"tools": [{"name": n, "description": d, "inputSchema": s} for n, d, s in TOOLS]}
    )


async def call_tool(ctx, params):
    name, args = params.name, params.arguments or {}
    if name == "test_simple_text":
        return result([text("This is a simple text response for testing.")])
    if name == "test_image_content":
        return result([{"type": "image", "data": PNG, "mimeType": "image/png"}])
    if name == "test_audio_content":
        return result([{"type": "audio", "data": WAV, "mimeType": "audio/wav"}])
    if name == "test_embedded_resource":
        return result(
            [
                {
                    "type": "resource",
                    "resource": {
                        "uri": "test://embedded-resource",
                        "mimeType": "text/plain",
                        "text": "This is an embedded resource content.",
                    },
                }
            ]
        )
    if name == "test_multiple_content_types":
        return result(
            [
                text("Multiple content types test:"),
                {"type": "image", "data": PNG, "mimeType": "image/png"},
                {
                    "type": "resource",
                    "resource": {
                        "uri": "test://mixed-content-resource",
                        "mimeType": "application/json",
                        "text": '{"test": "data", "value": 123}',
                    },
                },
            ]
        )
    if name == "test_tool_with_logging":
        for message in ("Tool execution started", "Tool processing data", "Tool execution completed"):
            await ctx.session.send_log_message("info", message, related_request_id=ctx.request_id)
            await anyio.sleep(0.05)
        return result([text("Tool with logging executed successfully")])
    if name == "test_error_handling":
        return result([text("This tool intentionally returns an error for testing")], is_error=True)
    if name == "test_tool_with_progress":
        token = ctx.meta.get("progress_token") if isinstance(ctx.meta, dict) else getattr(ctx.meta, "progress_token", None)
        for step in (0, 50, 100):
            if token is not None:
                await ctx.session.send_progress_notification(
                    token, step, 100, related_request_id=ctx.request_id
                )
            await anyio.sleep(0.05)
        return result([text(f"Progress test completed (token {token})")])
    if name == "test_sampling":
        params = types.CreateMessageRequestParams.model_validate(
            {
                "messages": [{"role": "user", "content": text(args.get("prompt", ""))}],
                "maxTokens": 100,
            }
        )
        answer = await ctx.session.send_request(
            types.CreateMessageRequest(params=params), types.CreateMessageResult
        )
        return result([text(f"LLM response: {answer.content.text}")])
    if name == "test_elicitation":
        schema = {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        }
        return result([text(await elicit(ctx, args.get("message", ""), schema))])
    if name == "test_elicitation_sep1034_defaults":
        return result([text(await elicit(ctx, "Please review and update the form fields with defaults", SEP1034))])
    if name == "test_elicitation_sep1330_enums":
        return result([text(await elicit(ctx, "Please select options from the enum fields", SEP1330))])
    if name == "json_schema_2020_12_tool":
        return result([text(json.dumps(args))])
    if name == "test_reconnection":
        await anyio.sleep(0.1)
        return result([text("Reconnection test completed successfully")])
    return result([text(f"unknown tool: {name}")], is_error=True)


async def list_resources(ctx, params):
    return types.ListResourcesResult.model_validate(
        {
            "resources": [
                {"uri": "test://static-text", "name": "static-text", "mimeType": "text/plain",
                 "description": "A static text resource"},
                {"uri": "test://static-binary", "name": "static-binary", "mimeType": "image/png",
                 "description": "A static binary resource"},
                {"uri": "test://watched-resource", "name": "watched-resource", "mimeType": "text/plain",
                 "description": "A resource that can be subscribed to"},
            ]
        }
    )


async def list_templates(ctx, params):
    return types.ListResourceTemplatesResult.model_validate(
        {
            "resourceTemplates": [
                {"uriTemplate": "test://template/{id}/data", "name": "template-data",
                 "mimeType": "application/json", "description": "Data by id"}
            ]
        }
    )


async def read_resource(ctx, params):
    uri = str(params.uri)
    if uri == "test://static-text":
        c = {"uri": uri, "mimeType": "text/plain", "text": "This is the content of the static text resource."}
    elif uri == "test://static-binary":
        c = {"uri": uri, "mimeType": "image/png", "blob": PNG}
    elif uri == "test://watched-resource":
        c = {"uri": uri, "mimeType": "text/plain", "text": "watched"}
    elif uri.startswith("test://template/") and uri.endswith("/data"):
        rid = uri[len("test://template/"):-len("/data")]
        c = {"uri": uri, "mimeType": "application/json",
             "text": json.dumps({"id": rid, "templateTest": True, "data": f"Data for ID: {rid}"})}
    else:
        raise ValueError(f"unknown resource: {uri}")
    return types.ReadResourceResult.model_validate({"contents": [c]})


async def subscribe(ctx, params):
    return types.EmptyResult()


PROMPTS = [
    {"name": "test_simple_prompt", "description": "A prompt without arguments"},
    {"name": "test_prompt_with_arguments", "description": "A prompt with two arguments",
     "arguments": [{"name": "arg1", "description": "First", "required": True},
                   {"name": "arg2", "description": "Second", "required": True}]},
    {"name": "test_prompt_with_embedded_resource", "description": "A prompt with a resource",
     "arguments": [{"name": "resourceUri", "description": "The resource", "required": True}]},
    {"name": "test_prompt_with_image", "description": "A prompt with an image"},
]


async def list_prompts(ctx, params):
    return types.ListPromptsResult.model_validate({"prompts": PROMPTS})


async def get_prompt(ctx, params):
    name, args = params.name, params.arguments or {}
    if name == "test_simple_prompt":
        msgs = [{"role": "user", "content": text("This is a simple prompt for testing.")}]
    elif name == "test_prompt_with_arguments":
        msgs = [{"role": "user", "content": text(
            f"Prompt with arguments: arg1='{args.get('arg1')}', arg2='{args.get('arg2')}'")}]
    elif name == "test_prompt_with_embedded_resource":
        msgs = [
            {"role": "user", "content": {"type": "resource", "resource": {
                "uri": args.get("resourceUri", "test://example-resource"), "mimeType": "text/plain",
                "text": "Embedded resource content for testing."}}},
            {"role": "user", "content": text("Please process the embedded resource above.")},
        ]
    elif name == "test_prompt_with_image":
        msgs = [
            {"role": "user", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}},
            {"role": "user", "content": text("Please analyze the image above.")},
        ]
    else:
        raise ValueError(f"unknown prompt: {name}")
    return types.GetPromptResult.model_validate({"messages": msgs})


async def complete(ctx, params):
    value = params.argument.value
    values = [v for v in ("paris", "park", "party", "test-one", "test-two") if v.startswith(value)]
    return types.CompleteResult.model_validate({"completion": {"values": values, "total": len(values), "hasMore": False}})


async def set_level(ctx, params):
    return types.EmptyResult()


server = Server(
    "tn-conformance-fixture",
    version="1.0.0",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_resources=list_resources,
    on_list_resource_templates=list_templates,
    on_read_resource=read_resource,
    on_subscribe_resource=subscribe,
    on_unsubscribe_resource=subscribe,
    on_list_prompts=list_prompts,
    on_get_prompt=get_prompt,
    on_completion=complete,
    on_set_logging_level=set_level,
)


async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options(NotificationOptions()))


def serve_http(port):
    """The same server on the SDK's own streamable HTTP transport, with the
    SDK's defaults: the Python SDK's figure in bench/mcp_conformance_peers.sh."""
    import uvicorn
    from own_port import listen_here

    port = listen_here(port)
    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=port, log_level="error")


if len(sys.argv) > 1 and sys.argv[1] == "streamable-http":
    serve_http(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
else:
    anyio.run(main)
