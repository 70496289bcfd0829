"""Port 0 for the SDK servers' HTTP modes: the server binds a free port
itself, before uvicorn starts, and tells the test which one on its stdout
(`PORT n`). A port the test picked and freed could be taken by another
test process first (CI's second run, scripts/flake_hunt.sh's load)."""
import socket
import sys


def listen_here(port):
    """For port 0: bind and listen on 127.0.0.1, make uvicorn serve that
    socket, print `PORT n` and return n. Any other port is returned as it is."""
    if port != 0:
        return port
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    serve = uvicorn.Server.serve

    async def serve_bound(self, sockets=None):
        return await serve(self, sockets=[sock])

    uvicorn.Server.serve = serve_bound
    bound = sock.getsockname()[1]
    print(f"PORT {bound}", flush=True)
    sys.stdout.flush()
    return bound
