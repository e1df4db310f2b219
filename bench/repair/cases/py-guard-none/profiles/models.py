from dataclasses import dataclass


@dataclass
class Profile:
    email: str
    nickname: str | None = None
