#!/usr/bin/env python3
"""A small OAuth-protected MCP server and authorization server in one
(standard library only), each mode getting one thing wrong, for the bad-input
tests of MCP authorization (tests/mcp_oauth.rs).

usage: oauth_hostile.py MODE

Prints its MCP URL (http://127.0.0.1:PORT/mcp) on the first line of stdout.
MODE:
  ok               everything right (the baseline)
  issuer           the authorization server metadata names another issuer
  issuer-path      no protected resource metadata; the metadata at the root
                   names the issuer BASE/oauth (the conformance suite's
                   auth/2025-03-26-oauth-metadata-backcompat server)
  no-access-token  the token response has no access_token
  long-challenge   the 401's WWW-Authenticate is 10,000 characters long, its
                   resource_metadata (past 4,096) pointing at another origin
  redirect-origin  /authorize redirects to another origin than redirect_uri
  metadata-redirect
                   the protected resource metadata redirects to another
                   origin (which serves metadata naming an evil server)
  no-pkce          the metadata lists no code_challenge_methods_supported
  echo             like ok; the tool answers the Authorization header it got
  expire           like ok; access tokens live 1 second
A request with the issued bearer token is served as MCP (JSON responses):
initialize, notifications, tools/list (tool `echo_auth`), tools/call.
GET /_stats answers {"authorize": N, "token": N, "refresh": N, "mcp_401": N}.
"""
import base64
import hashlib
import json
import secrets
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
stats = {"authorize": 0, "token": 0, "refresh": 0, "mcp_401": 0}
codes = {}
tokens = {}  # access token -> expiry
refresh_tokens = set()
lock = threading.Lock()


def evil_server():
    """Another origin: serves metadata naming itself, records any hit."""

    class Evil(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            stats["evil"] = stats.get("evil", 0) + 1
            body = json.dumps({
                "resource": "http://127.0.0.1:%d/mcp" % self.server.server_port,
                "authorization_servers": ["http://127.0.0.1:%d" % self.server.server_port],
            }).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Evil)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


EVIL = evil_server()
EVIL_BASE = "http://127.0.0.1:%d" % EVIL.server_port


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    @property
    def base(self):
        return "http://127.0.0.1:%d" % self.server.server_port

    def send_json(self, status, obj, headers=()):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def redirect(self, location):
        self.send_response(302)
        self.send_header("location", location)
        self.send_header("content-length", "0")
        self.end_headers()

    def body(self):
        n = int(self.headers.get("content-length") or 0)
        return self.rfile.read(n) if n else b""

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        if url.path == "/_stats":
            return self.send_json(200, stats)
        if url.path.startswith("/.well-known/oauth-protected-resource") and MODE == "issuer-path":
            return self.send_json(404, {"error": "not_found"})
        if url.path == "/.well-known/oauth-protected-resource/mcp":
            if MODE == "metadata-redirect":
                return self.redirect(EVIL_BASE + "/.well-known/oauth-protected-resource")
            return self.send_json(200, {
                "resource": self.base + "/mcp",
                "authorization_servers": [self.base],
                "scopes_supported": ["mcp"],
            })
        if url.path == "/.well-known/oauth-authorization-server":
            meta = {
                "issuer": {"issuer": "http://issuer.example",
                           "issuer-path": self.base + "/oauth"}.get(MODE, self.base),
                "authorization_endpoint": self.base + "/authorize",
                "token_endpoint": self.base + "/token",
                "registration_endpoint": self.base + "/register",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "token_endpoint_auth_methods_supported": ["none"],
                "code_challenge_methods_supported": ["S256"],
            }
            if MODE == "no-pkce":
                del meta["code_challenge_methods_supported"]
            return self.send_json(200, meta)
        if url.path == "/authorize":
            stats["authorize"] += 1
            code = "code-" + secrets.token_hex(8)
            codes[code] = q.get("code_challenge")
            target = q["redirect_uri"]
            if MODE == "redirect-origin":
                target = EVIL_BASE + "/callback"
            sep = "&" if "?" in target else "?"
            return self.redirect(target + sep + urllib.parse.urlencode(
                {"code": code, "state": q.get("state", "")}))
        if url.path == "/mcp":
            # No standalone stream.
            self.send_response(405)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        self.send_json(404, {"error": "not_found"})

    def token_ok(self):
        auth = self.headers.get("authorization", "")
        if not auth.startswith("Bearer "):
            return None
        t = auth[7:]
        with lock:
            exp = tokens.get(t)
        if exp is None or exp < time.time():
            return None
        return t

    def do_POST(self):
        url = urllib.parse.urlparse(self.path)
        raw = self.body()
        if url.path == "/register":
            req = json.loads(raw or b"{}")
            return self.send_json(201, {
                "client_id": "client-" + secrets.token_hex(4),
                "client_name": req.get("client_name"),
                "redirect_uris": req.get("redirect_uris", []),
                "token_endpoint_auth_method": "none",
            })
        if url.path == "/token":
            form = dict(urllib.parse.parse_qsl(raw.decode()))
            stats["token"] += 1
            grant = form.get("grant_type")
            if grant == "authorization_code":
                challenge = codes.pop(form.get("code", ""), None)
                verifier = form.get("code_verifier", "")
                computed = base64.urlsafe_b64encode(
                    hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
                if challenge is None or computed != challenge:
                    return self.send_json(400, {"error": "invalid_grant"})
            elif grant == "refresh_token":
                stats["refresh"] += 1
                with lock:
                    if form.get("refresh_token") not in refresh_tokens:
                        return self.send_json(400, {"error": "invalid_grant"})
                    refresh_tokens.discard(form.get("refresh_token"))
            else:
                return self.send_json(400, {"error": "unsupported_grant_type"})
            access = "at-" + secrets.token_hex(12)
            refresh = "rt-" + secrets.token_hex(12)
            ttl = 1 if MODE == "expire" else 3600
            with lock:
                tokens[access] = time.time() + ttl
                refresh_tokens.add(refresh)
            answer = {"token_type": "Bearer", "expires_in": ttl, "refresh_token": refresh}
            if MODE != "no-access-token":
                answer["access_token"] = access
            return self.send_json(200, answer)
        if url.path == "/mcp":
            token = self.token_ok()
            if token is None:
                stats["mcp_401"] += 1
                rm = self.base + "/.well-known/oauth-protected-resource/mcp"
                challenge = 'Bearer resource_metadata="%s", scope="mcp"' % rm
                if MODE == "long-challenge":
                    challenge = 'Bearer realm="' + "a" * 9900 + '", resource_metadata="' \
                        + EVIL_BASE + '/.well-known/oauth-protected-resource"'
                    challenge = challenge[:10000] if len(challenge) > 10000 else challenge
                return self.send_json(401, {"error": "invalid_token"},
                                      [("www-authenticate", challenge)])
            msg = json.loads(raw or b"{}")
            if "id" not in msg:
                self.send_response(202)
                self.send_header("content-length", "0")
                self.end_headers()
                return
            method = msg.get("method")
            if method == "initialize":
                result = {
                    "protocolVersion": msg["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "hostile", "version": "0"},
                }
            elif method == "tools/list":
                result = {"tools": [{
                    "name": "echo_auth",
                    "description": "Answers the Authorization header it got.",
                    "inputSchema": {"type": "object"},
                }]}
            elif method == "tools/call":
                text = self.headers.get("authorization", "")
                result = {"content": [{"type": "text", "text": "got " + text}]}
            else:
                return self.send_json(200, {"jsonrpc": "2.0", "id": msg["id"],
                                            "error": {"code": -32601, "message": "nope"}})
            return self.send_json(200, {"jsonrpc": "2.0", "id": msg["id"], "result": result})
        self.send_json(404, {"error": "not_found"})

    def do_DELETE(self):
        self.send_response(405)
        self.send_header("content-length", "0")
        self.end_headers()


srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("http://127.0.0.1:%d/mcp" % srv.server_port, flush=True)
try:
    srv.serve_forever()
except KeyboardInterrupt:
    pass
