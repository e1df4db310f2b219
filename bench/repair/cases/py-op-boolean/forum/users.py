from dataclasses import dataclass


@dataclass
class User:
    name: str
    active: bool = True
    banned: bool = False
    moderator: bool = False
