from cli_tools.durations import parse_duration


def timeout_flag(value: str | None, default_s: int = 60) -> int:
    return default_s if value is None else parse_duration(value)
