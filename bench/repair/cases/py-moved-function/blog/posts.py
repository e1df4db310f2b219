"""Blog posts and their URLs."""

from dataclasses import dataclass

from blog.utils import chunked, slugify


@dataclass
class Post:
    title: str
    body: str

    @property
    def url(self) -> str:
        return f"/posts/{slugify(self.title)}/"


def archive_pages(posts: list[Post], per_page: int = 10) -> list[list[str]]:
    return [[p.url for p in page] for page in chunked(posts, per_page)]
