"""Minimal CSV reading for product imports (files always start with a header)."""


def parse_csv(text: str, skip_header: bool = False, sep: str = ",") -> list[list[str]]:
    rows = [line.split(sep) for line in text.strip().splitlines() if line.strip()]
    return rows[1:] if skip_header else rows
