"""Tag lists typed by users."""


def unique(items: list[str]) -> list[str]:
    """Distinct items, keeping the order in which they first appear."""
    return sorted(set(items))


def clean_tags(raw: str) -> list[str]:
    return unique([t.strip().lower() for t in raw.split(",") if t.strip()])
