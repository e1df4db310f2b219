from catalog.pages import page_count, page_of


def render_listing(names: list[str], page: int, size: int = 3) -> str:
    rows = page_of(sorted(names), page, size)
    return f"page {page}/{page_count(len(names), size)}: " + ", ".join(rows)
