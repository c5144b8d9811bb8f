"""A TCP relay in front of a server that notes when each HTTP request reaches it: the truth a
replay's send times are judged against, taken outside the load tester.

    python arrival_proxy.py UPSTREAM_PORT PATH ARRIVALS_FILE

prints the port it listens on (127.0.0.1), then relays every connection byte for byte to
127.0.0.1:UPSTREAM_PORT and appends to ARRIVALS_FILE, one line each, the time
(time.monotonic_ns) of every chunk from a client that begins a request for PATH ("POST
/v1/chat/completions ..."): one HTTP/1.1 connection carries one request at a time, so a chunk
that begins with a request line is a new request's head.

It also watches the machine: it waits for events at most TICK at a time, and a wait that
ended more than STALL past its timeout means this process was not run when it was due (another process held the cores, or the virtual machine's host did): it
appends "S <when> <late by>" (ns) to the same file. A client send late at that moment was
late for the same reason, not the client's.

One process and one thread (epoll), so that it takes next to no CPU from the client it
watches.
"""

import selectors
import socket
import sys
import time

TICK = 0.002
STALL_NS = 1_000_000


def main(upstream_port, path, arrivals_file):
    upstream = ("127.0.0.1", int(upstream_port))
    head = b" " + path.encode() + b" "
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(256)
    listener.setblocking(False)
    print(listener.getsockname()[1], flush=True)
    out = open(arrivals_file, "a", buffering=1)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, None)
    while True:
        waited = time.monotonic_ns()
        events = selector.select(TICK)
        # Woken (by an event or the timeout) later than the timeout: not run when due.
        late = time.monotonic_ns() - waited - int(TICK * 1e9)
        if late > STALL_NS:
            out.write(f"S {waited + int(TICK * 1e9)} {late}\n")
        for key, _ in events:
            if key.data is None:
                accept(listener, upstream, selector)
                continue
            source, (sink, from_client) = key.fileobj, key.data
            try:
                chunk = source.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                close(selector, source, sink)
                continue
            if from_client and head in chunk.split(b"\r\n", 1)[0]:
                out.write(f"{time.monotonic_ns()}\n")
            try:
                sink.setblocking(True)
                sink.sendall(chunk)
                sink.setblocking(False)
            except OSError:
                close(selector, source, sink)


def accept(listener, upstream, selector):
    try:
        client, _ = listener.accept()
    except BlockingIOError:
        return
    server = socket.create_connection(upstream, timeout=30)
    for end in (client, server):
        end.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        end.setblocking(False)
    selector.register(client, selectors.EVENT_READ, (server, True))
    selector.register(server, selectors.EVENT_READ, (client, False))


def close(selector, *ends):
    for end in ends:
        try:
            selector.unregister(end)
        except (KeyError, ValueError):
            pass
        end.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
