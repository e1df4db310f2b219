from dataclasses import dataclass


@dataclass(frozen=True)
class User:
    login: str
    disabled: bool = False
