"""``@<app slug>`` mentions read as the command they ask for (bot.commands.parse_mention)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from bot.commands import Command, CommandError, parse_mention, parse_request


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("@arcs fix this", Command(verb="fix")),
        ("@ARCS please retry", Command(verb="retry")),
        ("Hey @arcs, stop!", Command(verb="stop")),
        ("@arcs[bot] help", Command(verb="help")),
        ("@arcs apply it", Command(verb="apply")),
        ("@arcs fix this tier=large budget=$2", Command(verb="fix", tier="large", budget_usd=Decimal(2))),
        (
            "Looks wrong.\n@arcs revise keep the API\nand add a test",
            Command(verb="revise", instructions="keep the API\nand add a test"),
        ),
    ],
)
def test_one_command_word_is_that_command(body: str, expected: Command) -> None:
    assert parse_mention(body, "arcs") == expected


@pytest.mark.parametrize(
    "body",
    [
        "thanks @arcs!",  # no command
        "@arcs fix this and then stop",  # two commands
        "@arcs don't fix this",  # a negation
        "@arcs do not retry",
    ],
)
def test_anything_ambiguous_is_a_short_help_never_a_repair(body: str) -> None:
    parsed = parse_mention(body, "arcs")
    assert isinstance(parsed, CommandError)
    assert "`@arcs fix`" in parsed.message and "`@arcs help`" in parsed.message


@pytest.mark.parametrize(
    "body",
    [
        "no mention here, fix it",
        "@arcsbot fix this",  # another account
        "@arcs-two fix this",
        "mail me at me@arcs.dev fix",
        "> @arcs fix this",  # quoting someone
        "```\n@arcs fix this\n```",  # code
        "use `@arcs fix` to ask",  # inline code
    ],
)
def test_not_a_mention(body: str) -> None:
    assert parse_mention(body, "arcs") is None


def test_the_handle_is_the_apps() -> None:
    assert parse_mention("@my-arcs fix", "my-arcs") == Command(verb="fix")
    assert parse_mention("@arcs fix", "my-arcs") is None


def test_options_and_revise_errors() -> None:
    bad = parse_mention("@arcs fix tier=enormous", "arcs")
    assert isinstance(bad, CommandError) and "Unknown tier" in bad.message
    assert isinstance(parse_mention("@arcs stop now=yes", "arcs"), CommandError)
    empty = parse_mention("@arcs revise", "arcs")
    assert isinstance(empty, CommandError) and "needs instructions" in empty.message


def test_an_arcs_line_wins_over_a_mention() -> None:
    assert parse_request("@arcs stop\n/arcs fix", "arcs") == Command(verb="fix")
    assert parse_request("@arcs stop", "arcs") == Command(verb="stop")
    assert parse_request("nothing", "arcs") is None
