"""Batch jobs for the mailer."""

from batching.chunks import chunks


def batches(recipients: list[str], size: int = 100) -> list[dict[str, object]]:
    return [{"batch": i, "to": group} for i, group in enumerate(chunks(recipients, size))]
