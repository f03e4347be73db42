"""The example stack's API: GET /health, GET / answers the greeting stored in db. Edit this file
while the stack runs: hermes-procs restarts the job (its `watch`)."""

import http.server
import os
import socket

VERSION = 1


def greeting() -> str:
    with socket.create_connection(("127.0.0.1", int(os.environ["DB_PORT"])), timeout=5) as conn:
        conn.sendall(b"GET greeting\n")
        return conn.makefile().readline().strip()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"ok\n" if self.path == "/health" else f"{greeting()} (api v{VERSION})\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


if __name__ == "__main__":
    port = int(os.environ["PORT"])
    print(f"api v{VERSION}: http://127.0.0.1:{port}/", flush=True)
    http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
