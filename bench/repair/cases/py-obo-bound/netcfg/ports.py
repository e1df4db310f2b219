"""Port number checks."""

WELL_KNOWN_MAX = 1023


def is_valid_port(port: int) -> bool:
    return 0 < port < 65535


def is_privileged(port: int) -> bool:
    return is_valid_port(port) and port <= WELL_KNOWN_MAX
