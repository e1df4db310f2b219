"""The relay that runs INSIDE the setup sandbox: ``127.0.0.1:PORT`` -> the egress proxy's Unix socket.

The sandbox has its own network namespace (only its private loopback), so package managers are
pointed at ``http://127.0.0.1:PORT`` (``HTTP_PROXY``...) and this relay copies each connection
to the host's proxy (:mod:`runners.egress_proxy`) over the Unix socket bind-mounted into the
sandbox; the proxy decides what may pass.

It is copied into the sandbox as a plain file and run by whatever Python the sandbox has, so it is
one self-contained stdlib script (Python 3.7+, no package imports)::

    python3 relay.py SOCKET PORT

It binds the port, checks that the socket answers, then detaches (forks) and returns 0, so the
setup command that follows finds the port listening. It ends with the sandbox.
"""

from __future__ import annotations

import os
import socket
import sys
import threading

_CHUNK = 65536


def _pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy ``src`` to ``dst`` until EOF, then half-close ``dst``."""
    try:
        while True:
            data = src.recv(_CHUNK)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _relay(client: socket.socket, path: str) -> None:
    try:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        upstream.connect(path)
    except OSError:
        client.close()
        return
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            continue
        threading.Thread(target=_relay, args=(client, path), daemon=True).start()


def main(argv: list[str]) -> int:
    """Bind, check the socket, detach; 0 when the relay is listening, 2 otherwise."""
    if len(argv) != 3 or not argv[2].isdigit():
        sys.stderr.write("usage: relay.py SOCKET PORT\n")
        return 2
    path, port = argv[1], int(argv[2])
    try:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(128)
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.connect(path)
        probe.close()
    except OSError as exc:
        sys.stderr.write("arcs relay: " + str(exc) + "\n")
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    if os.fork():
        return 0
    os.setsid()
    # Let go of the sandbox's output pipes: the run ends when the setup command does.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    _serve(listener, path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
