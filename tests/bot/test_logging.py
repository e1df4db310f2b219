"""Log configuration: JSON lines that several processes can share one pipe with."""

from __future__ import annotations

import io
import json

import structlog

from bot.logging import configure_logging
from bot.settings import Settings


class Recorder(io.StringIO):
    """A stream that remembers each write call."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)

    def isatty(self) -> bool:
        return False


def test_each_json_line_is_one_write(settings: Settings) -> None:
    stream = Recorder()
    configure_logging(settings.model_copy(update={"log_format": "json"}), stream=stream)
    structlog.get_logger("t").info("job.done", attempt_id="7", outcome="fixed")
    structlog.get_logger("t").warning("job.slow", seconds=12)
    # A write that is a whole line is atomic on a pipe (< PIPE_BUF): worker processes sharing
    # stderr cannot splice two JSON documents into one line.
    assert len(stream.writes) == 2
    for text in stream.writes:
        assert text.endswith("\n") and text.count("\n") == 1
        json.loads(text)
    assert json.loads(stream.writes[0])["event"] == "job.done"
