"""Posts with tags."""


class Post:
    def __init__(self, title: str, tags: list[str] = []) -> None:
        self.title = title
        self.tags = tags

    def tag(self, name: str) -> None:
        if name not in self.tags:
            self.tags.append(name)
