#!/usr/bin/env python3
"""An official-SDK MCP stdio server whose tools answer with media (SPEC §1B):
an image, audio, an embedded blob and text resource, and a resource link.

usage: sdk_media_server.py PNG_PATH
"""
import base64
import sys

try:
    from mcp.server.fastmcp import FastMCP as Server
except ImportError:
    from mcp.server.mcpserver import MCPServer as Server
from mcp import types

png_path = sys.argv[1]
server = Server("tn-media-test", log_level="ERROR")


def png_b64():
    with open(png_path, "rb") as f:
        return base64.b64encode(f.read()).decode("ascii")


@server.tool(description="A chart as a PNG image, with a caption.")
def chart() -> list:
    return [
        types.TextContent(type="text", text="the chart"),
        types.ImageContent(type="image", data=png_b64(), mimeType="image/png"),
    ]


@server.tool(description="Only an image, no text.")
def picture() -> list:
    return [types.ImageContent(type="image", data=png_b64(), mimeType="image/png")]


@server.tool(description="Every other kind of media content.")
def assorted() -> list:
    return [
        types.AudioContent(type="audio", data="SUQz", mimeType="audio/mpeg"),
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(uri="file:///note.txt", text="a note", mimeType="text/plain"),
        ),
        types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(uri="file:///r.pdf", blob="JVBERg==", mimeType="application/pdf"),
        ),
        types.ResourceLink(type="resource_link", uri="https://example.invalid/big.bin", name="big.bin"),
    ]


server.run("stdio")
