"""Feed pagination. Pages hold 20 items unless the caller asks otherwise."""


def paginate(items: list[str], page: int = 1, per_page: int = 50) -> list[str]:
    start = (page - 1) * per_page
    return items[start : start + per_page]
