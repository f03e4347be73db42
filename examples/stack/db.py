"""A toy key-value store for the example stack: `db.py PORT` serves; `db.py --put PORT KEY VALUE`
stores one value. One line per request: `GET key` or `PUT key value`."""

import socket
import sys
import time


def serve(port: int) -> None:
    time.sleep(1)  # a real database takes a while: the stack waits for the port
    data: dict[str, str] = {}
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen()
    print(f"db: listening on {port}", flush=True)
    while True:
        conn, _ = server.accept()
        with conn:
            words = conn.makefile().readline().split(" ", 2)
            if words[0] == "PUT" and len(words) == 3:
                data[words[1]] = words[2].strip()
                print(f"db: {words[1]} stored", flush=True)
            conn.sendall((data.get(words[1].strip(), "") if len(words) > 1 else "").encode() + b"\n")


def put(port: int, key: str, value: str) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(f"PUT {key} {value}\n".encode())
        conn.recv(100)
    print(f"seed: {key} = {value}")


if __name__ == "__main__":
    if sys.argv[1] == "--put":
        put(int(sys.argv[2]), sys.argv[3], sys.argv[4])
    else:
        serve(int(sys.argv[1]))
