"""Outgoing mail (queued in OUTBOX; a worker drains it)."""

from dataclasses import dataclass

NOREPLY_ADDRESS = "noreply@shop.example"


@dataclass(frozen=True)
class Message:
    to: str
    subject: str
    body: str
    sender: str


OUTBOX: list[Message] = []


def send_email(to: str, subject: str, body: str, sender: str) -> Message:
    if "@" not in to:
        raise ValueError(f"bad recipient {to!r}")
    message = Message(to, subject, body, sender)
    OUTBOX.append(message)
    return message
