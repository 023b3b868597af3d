"""``python -S tests/agents/socket_pipe.py SOCKET``: a stand-in agent process that pipes its stdin to
the Unix socket SOCKET and what comes back to its stdout, for an agent served in the test's own
process (:func:`tests.helpers.piped_agent.piped_agent`).

The front-end that spawns it (the relay) gets a real process with real pipes, its own process
group, an exit when its input ends; the agent's code behind it needs no interpreter start and no
ACP SDK import of its own. Standard library only, so it starts without ``site`` (``-S``).
"""

from __future__ import annotations

import os
import socket
import sys
import threading


def _stdin_to(sock: socket.socket) -> None:
    """Our stdin to the socket; its end is the socket's end of input (the agent sees its EOF)."""
    try:
        while data := os.read(0, 65536):
            sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def main() -> int:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(sys.argv[1])
    threading.Thread(target=_stdin_to, args=(sock,), daemon=True).start()
    try:
        while data := sock.recv(65536):  # the agent closed the connection: this process ends
            view = memoryview(data)
            while view:
                view = view[os.write(1, view) :]
    except OSError:  # the reader of our stdout went away
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
