from netcfg.ports import is_valid_port


def parse_endpoint(text: str) -> tuple[str, int]:
    host, _, port_text = text.rpartition(":")
    port = int(port_text)
    if not host or not is_valid_port(port):
        raise ValueError(f"bad endpoint {text!r}")
    return host, port
