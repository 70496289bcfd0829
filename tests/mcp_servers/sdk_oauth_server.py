#!/usr/bin/env python3
"""An OAuth-protected MCP server on the official MCP Python SDK (mcp 2.x
`MCPServer(auth=..., auth_server_provider=...)`): one Starlette app serves the
protected resource metadata, the authorization server (metadata, /register,
/authorize, /token, RFC 8707 resource), and a bearer-gated streamable HTTP
/mcp. The authorization endpoint consents at once (302 to the redirect URI
with code and state), as a test server does.

usage: sdk_oauth_server.py [--ttl SECONDS] [--scopes "a b"]

Prints its MCP URL (http://127.0.0.1:PORT/mcp) on the first line of stdout.
Access tokens live --ttl seconds (default 3600); every refresh rotates the
refresh token (the old one is refused afterwards, and its whole family is
revoked, as rotation-strict servers do). GET /_stats answers the counters:
authorizations, code exchanges, refreshes, refreshes refused, registrations.
Tool `whoami` answers "ok <client id>".
"""
import secrets
import socket
import sys
import threading
import time
import warnings

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse

warnings.simplefilter("ignore")

ttl = 3600
scopes = ["mcp"]
args = sys.argv[1:]
while args:
    flag = args.pop(0)
    if flag == "--ttl":
        ttl = int(args.pop(0))
    elif flag == "--scopes":
        scopes = args.pop(0).split()
    else:
        sys.exit(f"unknown flag {flag}")

sock = socket.socket()
sock.bind(("127.0.0.1", 0))
port = sock.getsockname()[1]
sock.close()
base = f"http://127.0.0.1:{port}"

stats = {"authorize": 0, "code": 0, "refresh": 0, "refresh_refused": 0, "register": 0}


class Provider:
    def __init__(self):
        self.clients = {}
        self.codes = {}
        self.access = {}
        self.refresh = {}
        self.spent = {}  # rotated-away refresh token -> family
        self.lock = threading.Lock()

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull):
        stats["register"] += 1
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params: AuthorizationParams):
        stats["authorize"] += 1
        code = "code-" + secrets.token_hex(8)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or scopes,
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, code):
        return self.codes.get(code)

    def _issue(self, client_id, granted, resource, family):
        access = "at-" + secrets.token_hex(12)
        refresh = "rt-" + secrets.token_hex(12)
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=granted,
            expires_at=int(time.time()) + ttl,
            resource=resource,
        )
        self.refresh[refresh] = (
            RefreshToken(token=refresh, client_id=client_id, scopes=granted, resource=resource),
            family,
        )
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=ttl,
            scope=" ".join(granted),
            refresh_token=refresh,
        )

    async def exchange_authorization_code(self, client, code):
        stats["code"] += 1
        self.codes.pop(code.code, None)
        return self._issue(client.client_id, code.scopes, code.resource, secrets.token_hex(4))

    async def load_refresh_token(self, client, refresh_token):
        got = self.refresh.get(refresh_token)
        if got is None:
            if refresh_token in self.spent:
                # Reuse of a rotated token: revoke the family.
                family = self.spent[refresh_token]
                for k, (_, f) in list(self.refresh.items()):
                    if f == family:
                        del self.refresh[k]
            stats["refresh_refused"] += 1
            return None
        return got[0]

    async def exchange_refresh_token(self, client, refresh_token, requested):
        with self.lock:
            got = self.refresh.pop(refresh_token.token, None)
            if got is None:
                stats["refresh_refused"] += 1
                raise TokenError("invalid_grant", "refresh token already used")
            self.spent[refresh_token.token] = got[1]
        stats["refresh"] += 1
        return self._issue(client.client_id, refresh_token.scopes, refresh_token.resource, got[1])

    async def load_access_token(self, token):
        t = self.access.get(token)
        if t is None or (t.expires_at and t.expires_at < time.time()):
            return None
        return t

    async def revoke_token(self, token):
        self.access.pop(getattr(token, "token", ""), None)
        self.refresh.pop(getattr(token, "token", ""), None)


server = MCPServer(
    "tn-oauth-test",
    log_level="ERROR",
    auth=AuthSettings(
        issuer_url=base,
        resource_server_url=f"{base}/mcp",
        required_scopes=scopes,
        client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=scopes),
        validate_token_resource=True,
    ),
    auth_server_provider=Provider(),
)


@server.tool(description="Say who called.")
def whoami() -> str:
    from mcp.server.auth.middleware.auth_context import get_access_token

    t = get_access_token()
    return f"ok {t.client_id if t else '?'}"


@server.custom_route("/_stats", methods=["GET"])
async def stats_route(request: Request):
    return JSONResponse(stats)


print(f"{base}/mcp", flush=True)
server.run("streamable-http", host="127.0.0.1", port=port)
