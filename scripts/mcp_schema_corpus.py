#!/usr/bin/env python3
"""Rebuilds tests/data/mcp-schema-corpus.jsonl.gz from downloaded inputs.

The corpus is the input schemas of real MCP servers' tools, gathered from
public repositories that hold recorded `tools/list` results or tool
catalogs (tests/data/mcp-schema-corpus.md names each one, its commit and
its license). This script only reads those files and writes the corpus; it
fetches nothing.

INPUTS is a directory holding each source's files at their repository
paths, under a directory named `owner+repo`:

    INPUTS/icip-cas+LiveMCPBench/tools/LiveMCPTool/tools.json
    INPUTS/github+github-mcp-server/pkg/github/__toolsnaps__/*.snap
    ...

(`git -C CLONE show COMMIT:PATH > INPUTS/owner+repo/PATH` for each path
the SOURCES table below matches, at the commit the .md names.)

Each line of the output is one JSON object:

    {"source": "owner/repo/path", "server": "...", "tool": "...",
     "inputSchema": {...}}

Schemas are deduplicated by their canonical JSON (sorted keys): the first
source in SOURCES order keeps a schema, later copies are dropped. The gzip
header carries no name and no time, so the same inputs give the same bytes.

    scripts/mcp_schema_corpus.py INPUTS [OUT]     (OUT defaults to the test data path)
"""

from __future__ import annotations

import gzip
import io
import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "tests/data/mcp-schema-corpus.jsonl.gz"

SCHEMA_KEYS = ("inputSchema", "input_schema", "parameters")


def tools_in(value):
    """Every (name, schema) pair in `value`: an object with a string `name`
    and an object under one of SCHEMA_KEYS, at any depth."""
    if isinstance(value, dict):
        name = value.get("name")
        if isinstance(name, str):
            for key in SCHEMA_KEYS:
                schema = value.get(key)
                if isinstance(schema, dict):
                    yield name, schema
                    break
        for child in value.values():
            yield from tools_in(child)
    elif isinstance(value, list):
        for child in value:
            yield from tools_in(child)


def livemcpbench(doc, _path):
    for entry in doc:
        for server, listing in (entry.get("tools") or {}).items():
            for name, schema in tools_in(listing.get("tools", [])):
                yield server, name, schema


def tooluniverse(doc, path):
    # A list of tool definitions, each schema under `parameter` (singular);
    # the other files in the folder (notes on broken APIs, defaults) are
    # not lists and hold no tools.
    if not isinstance(doc, list):
        return
    for tool in doc:
        if isinstance(tool, dict) and isinstance(tool.get("name"), str):
            schema = tool.get("parameter")
            if isinstance(schema, dict):
                yield f"tooluniverse/{path.stem}", tool["name"], schema


def posthog_inputs(doc, _path):
    # A JSON Schema document: one definition per tool input, named after
    # the tool's zod schema; none refers to another.
    for name, schema in sorted((doc.get("definitions") or {}).items()):
        if isinstance(schema, dict):
            yield "posthog-mcp", name, schema


def named(server):
    def extract(doc, _path):
        for name, schema in tools_in(doc):
            yield server, name, schema

    return extract


def mcp_proxy_snapshot(doc, path):
    if not isinstance(doc, dict):
        return
    server = doc.get("server") or (doc.get("server_info") or {}).get("name") or path.stem
    for name, schema in tools_in(doc.get("tools", [])):
        yield server, name, schema


# (owner+repo directory, path pattern, extractor), in dedupe priority order.
SOURCES = [
    ("github+github-mcp-server", r"pkg/github/__toolsnaps__/[^/]+\.snap", named("github-mcp-server")),
    (
        "containers+kubernetes-mcp-server",
        r"pkg/mcp/testdata/toolsets-[^/]*tools[^/]*\.json",
        named("kubernetes-mcp-server"),
    ),
    ("PostHog+mcp", r"schema/tool-inputs\.json", posthog_inputs),
    # The captures only: not the *-examples.json outputs (some made up for
    # a survey) nor memory-projection-demo.json (tools of the repo's own).
    (
        "jakemannix+mcp-proxy",
        r"demo/mcp-snapshots/(cloudflare-(browser|docs|radar)|mcp-server-fetch"
        r"|server-(filesystem|github|memory|puppeteer))\.json",
        mcp_proxy_snapshot,
    ),
    ("icip-cas+LiveMCPBench", r"tools/LiveMCPTool/tools\.json", livemcpbench),
    (
        "wenliangz+ToolUniverse",
        r"src/tooluniverse/data/((packages|remote_tools)/)?[^/]+\.json",
        tooluniverse,
    ),
]


def canonical(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def build(inputs: Path):
    seen = set()
    rows = []
    kept, found = Counter(), Counter()
    for directory, pattern, extract in SOURCES:
        base = inputs / directory
        repo = directory.replace("+", "/", 1)
        files = sorted(p for p in base.rglob("*") if p.is_file())
        matched = [p for p in files if re.fullmatch(pattern, p.relative_to(base).as_posix())]
        if not matched:
            sys.exit(f"{directory}: no input matches {pattern} under {base}")
        for path in matched:
            rel = path.relative_to(base).as_posix()
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                # A capture that failed (an error text, not JSON).
                print(f"skipped {repo}/{rel}: {e}", file=sys.stderr)
                continue
            for server, tool, schema in extract(doc, path):
                found[repo] += 1
                key = canonical(schema)
                if key in seen:
                    continue
                seen.add(key)
                kept[repo] += 1
                rows.append(
                    {"source": f"{repo}/{rel}", "server": server, "tool": tool, "inputSchema": schema}
                )
    return rows, kept, found


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    inputs = Path(argv[1])
    out = Path(argv[2]) if len(argv) == 3 else DEFAULT_OUT
    rows, kept, found = build(inputs)
    text = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows)
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(text.encode("utf-8"))
    out.write_bytes(buf.getvalue())
    for repo in kept:
        print(f"{repo}: {kept[repo]} distinct of {found[repo]} tools", file=sys.stderr)
    print(f"{len(rows)} schemas, {out.stat().st_size} bytes -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
