from feed.paging import paginate


def timeline(posts: list[str], page: int = 1) -> list[str]:
    newest_first = list(reversed(posts))
    return paginate(newest_first, page)
