"""The sandbox's one way out: relays 127.0.0.1:PORT inside the sandbox to the egress socket bound into it.

Runs inside the sandbox with the system's python3 (`python3 -I -S forwarder.py PORT SOCKET`), so it uses
the standard library only and imports nothing of the stack. It binds the port, then forks: the parent
exits at once (the port already listens, so the command that follows can connect), the child relays.
One thread, non-blocking sockets, at most one chunk buffered per direction: threads would count
against the sandbox's process limit and unbounded buffers against its memory. What may be reached is
decided outside, by the proxy listening on the socket; this only carries bytes.
"""

import os
import selectors
import socket
import sys

CHUNK = 64 * 1024
BACKLOG = 64


class Pipe:
    """One direction of a relayed connection: bytes read from `src` wait in `pending` until `dst` takes them."""

    def __init__(self, src, dst):
        self.src, self.dst, self.pending, self.eof = src, dst, b"", False


def relay_forever(listener, socket_path):
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, None)
    pipes = {}  # socket -> (the pipe it reads for, the pipe it writes for)
    while True:
        for key, events in sel.select():
            if key.data is None:
                accept(listener, socket_path, sel, pipes)
            else:
                step(key.fileobj, events, sel, pipes)


def accept(listener, socket_path, sel, pipes):
    try:
        inner, _ = listener.accept()
    except OSError:
        return
    outer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        outer.connect(socket_path)
    except OSError:
        inner.close()
        outer.close()
        return
    for s in (inner, outer):
        s.setblocking(False)
    up, down = Pipe(inner, outer), Pipe(outer, inner)
    pipes[inner], pipes[outer] = (up, down), (down, up)
    sel.register(inner, selectors.EVENT_READ, "relay")
    sel.register(outer, selectors.EVENT_READ, "relay")


def step(sock, events, sel, pipes):
    reads, writes = pipes[sock]
    try:
        if events & selectors.EVENT_READ and not reads.pending and not reads.eof:
            data = sock.recv(CHUNK)
            if data:
                reads.pending = data
            else:
                reads.eof = True
                reads.dst.shutdown(socket.SHUT_WR)
        if events & selectors.EVENT_WRITE and writes.pending:
            sent = sock.send(writes.pending)
            writes.pending = writes.pending[sent:]
    except BlockingIOError:
        pass  # not ready after all: the selector says when it is
    except OSError:
        close(reads, sel, pipes)
        return
    if reads.eof and writes.eof and not reads.pending and not writes.pending:
        close(reads, sel, pipes)
        return
    for s in (reads.src, reads.dst):
        interest(s, sel, pipes)


def interest(sock, sel, pipes):
    """Read only while the bytes read before have gone on; write only while some wait."""
    reads, writes = pipes[sock]
    mask = (0 if reads.pending or reads.eof else selectors.EVENT_READ) | \
        (selectors.EVENT_WRITE if writes.pending else 0)
    registered = sock in sel.get_map()
    if mask and registered:
        sel.modify(sock, mask, "relay")
    elif mask:
        sel.register(sock, mask, "relay")
    elif registered:
        sel.unregister(sock)


def close(pipe, sel, pipes):
    for s in (pipe.src, pipe.dst):
        if s in pipes:
            del pipes[s]
            if s in sel.get_map():
                sel.unregister(s)
            s.close()


def main(argv):
    port, socket_path = int(argv[1]), argv[2]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(BACKLOG)
    if os.fork():
        return 0
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)  # the command's output pipe must close when the command ends, not with us
    relay_forever(listener, socket_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
