from cms.posts import Post


def tagged(posts: list[Post], name: str) -> list[str]:
    return [p.title for p in posts if name in p.tags]
