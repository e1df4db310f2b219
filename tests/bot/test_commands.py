"""``/arcs`` comment parsing: the grammar, helpful errors, and input that must not run anything."""

from __future__ import annotations

from decimal import Decimal

import pytest

from bot.commands import (
    HELP_TEXT,
    MAX_INSTRUCTIONS_CHARS,
    Command,
    CommandError,
    parse_command,
)


def ok(body: str) -> Command:
    parsed = parse_command(body)
    assert isinstance(parsed, Command), parsed
    return parsed


def err(body: str) -> CommandError:
    parsed = parse_command(body)
    assert isinstance(parsed, CommandError), parsed
    return parsed


# --- the grammar -----------------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["fix", "retry", "stop", "help"])
def test_plain_verbs(verb: str) -> None:
    assert ok(f"/arcs {verb}") == Command(verb=verb)  # type: ignore[arg-type]


def test_bare_prefix_means_help() -> None:
    assert ok("/arcs") == Command(verb="help")
    assert ok("/arcs   ") == Command(verb="help")


def test_fix_with_all_options() -> None:
    cmd = ok("/arcs fix tier=large budget=$2 iterations=5")
    assert cmd == Command(verb="fix", tier="large", budget_usd=Decimal("2"), iterations=5)


@pytest.mark.parametrize("tier", ["0", "small", "medium", "large", "auto", "LARGE", "Auto"])
def test_tiers(tier: str) -> None:
    assert ok(f"/arcs fix tier={tier}").tier == tier.lower()


@pytest.mark.parametrize(
    ("raw", "amount"),
    [("0.50", "0.50"), ("$2", "2"), ("2", "2"), ("$0.05", "0.05"), (".5", "0.5"), ("1000", "1000")],
)
def test_budgets(raw: str, amount: str) -> None:
    assert ok(f"/arcs fix budget={raw}").budget_usd == Decimal(amount)


def test_retry_takes_the_same_options() -> None:
    assert ok("/arcs retry tier=small budget=1") == Command(verb="retry", tier="small", budget_usd=Decimal(1))


def test_options_in_any_order_and_case() -> None:
    assert ok("/arcs fix Budget=3 TIER=medium") == Command(verb="fix", tier="medium", budget_usd=Decimal(3))


def test_prefix_and_verb_are_case_insensitive() -> None:
    assert ok("/ARCS FIX").verb == "fix"
    assert ok("/Arcs Stop").verb == "stop"


def test_command_among_prose() -> None:
    body = "Thanks for the report!\n\n/arcs fix tier=small\n\nLet's see what it does."
    assert ok(body) == Command(verb="fix", tier="small")


def test_crlf_and_up_to_three_spaces_of_indentation() -> None:
    assert ok("hello\r\n   /arcs stop\r\n").verb == "stop"


def test_revise_takes_the_rest_of_the_comment() -> None:
    cmd = ok("Looks close.\n/arcs revise keep the public API\nand add a test for negatives\n")
    assert cmd.verb == "revise"
    assert cmd.instructions == "keep the public API\nand add a test for negatives"


def test_revise_instructions_may_start_on_the_next_line() -> None:
    assert ok("/arcs revise\nplease rename x to count").instructions == "please rename x to count"


def test_revise_instructions_are_bounded() -> None:
    cmd = ok("/arcs revise " + "x" * (MAX_INSTRUCTIONS_CHARS * 2))
    assert cmd.instructions is not None and len(cmd.instructions) == MAX_INSTRUCTIONS_CHARS


def test_as_dict_is_json_friendly() -> None:
    cmd = ok("/arcs fix tier=0 budget=0.10 iterations=3")
    assert cmd.as_dict() == {
        "verb": "fix",
        "tier": "0",
        "budget_usd": "0.10",
        "iterations": 3,
        "instructions": None,
    }


def test_help_text_mentions_every_verb() -> None:
    for verb in ("fix", "retry", "stop", "revise", "help"):
        assert f"/arcs {verb}" in HELP_TEXT


# --- not addressed to ARCS -------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "",
        "LGTM",
        "please run /arcs fix when you can",  # not at the start of a line
        "> /arcs fix",  # quoting someone
        ">> /arcs fix",
        "  > /arcs fix tier=large",
        "    /arcs fix",  # four spaces: a Markdown code block
        "\t/arcs fix",
        "```\n/arcs fix\n```",
        "~~~\n/arcs fix\n~~~",
        "````\n```\n/arcs fix\n```\n````",  # a longer fence is not closed by a shorter one
        "`/arcs fix`",  # inline code
        "/arcsfix",
        "/arcs-fix",
        "/arcs\u200bfix",  # zero-width space: not a separator
        "<!-- /arcs fix -->",
        "\\/arcs fix",
        "//arcs fix",
    ],
)
def test_not_a_command(body: str) -> None:
    assert parse_command(body) is None


def test_command_after_a_closed_fence_counts() -> None:
    assert ok("```\n/arcs stop\n```\n/arcs fix").verb == "fix"


def test_unclosed_fence_hides_everything_after_it() -> None:
    assert parse_command("```python\nprint(1)\n/arcs fix") is None


def test_quoted_command_does_not_hide_a_real_one() -> None:
    assert ok("> /arcs stop\n/arcs fix tier=small") == Command(verb="fix", tier="small")


# --- helpful errors --------------------------------------------------------------------------


def test_unknown_verb_suggests_the_closest() -> None:
    error = err("/arcs fx")
    assert "Unknown command `/arcs fx`" in error.message
    assert "Did you mean `fix`?" in error.message
    assert error.line == "/arcs fx"


def test_unknown_verb_without_a_close_match_shows_usage() -> None:
    error = err("/arcs deploy-to-production")
    assert "Did you mean" not in error.message
    assert "Usage:" in error.message


def test_unknown_option_suggests_the_closest() -> None:
    error = err("/arcs fix budjet=2")
    assert "Unknown option `budjet`" in error.message and "`budget`" in error.message


def test_unknown_tier() -> None:
    error = err("/arcs fix tier=huge")
    assert "Unknown tier `huge`" in error.message and "`large`" in error.message


def test_tier_with_a_lookalike_character_is_refused() -> None:
    assert "Unknown tier" in err("/arcs fix tier=l\u0430rge").message  # Cyrillic a


@pytest.mark.parametrize(
    "raw", ["abc", "-1", "$-1", "1e3", "2 USD", "1,50", "€2", "0x10", "nan", "inf", "$", "1.23456"]
)
def test_bad_budgets(raw: str) -> None:
    assert "budget" in err(f"/arcs fix budget={raw}").message


@pytest.mark.parametrize("raw", ["0", "$0", "0.00"])
def test_zero_budget(raw: str) -> None:
    assert "more than $0" in err(f"/arcs fix budget={raw}").message


def test_budget_above_the_sanity_bound() -> None:
    assert "at most" in err("/arcs fix budget=1000.01").message


def test_the_help_text_names_the_limits_the_parser_enforces() -> None:
    # One copy, in jobs.render: the worker posts the help text, the parser enforces its limits.
    from jobs import render

    assert HELP_TEXT is render.HELP_TEXT
    assert f"${render.MAX_BUDGET_USD};" in HELP_TEXT
    assert f"maximum iterations: {render.MAX_ITERATIONS}." in HELP_TEXT
    assert ok(f"/arcs fix budget={render.MAX_BUDGET_USD}").budget_usd == render.MAX_BUDGET_USD
    assert "at most" in err(f"/arcs fix budget={render.MAX_BUDGET_USD + Decimal('0.01')}").message
    assert ok(f"/arcs fix iterations={render.MAX_ITERATIONS}").iterations == render.MAX_ITERATIONS
    assert "iterations" in err(f"/arcs fix iterations={render.MAX_ITERATIONS + 1}").message


@pytest.mark.parametrize("raw", ["0", "-3", "101", "2.5", "x", "\u0663"])  # U+0663: Arabic-Indic 3
def test_bad_iterations(raw: str) -> None:
    assert "iterations" in err(f"/arcs fix iterations={raw}").message


def test_positional_junk() -> None:
    assert "name=value" in err("/arcs fix now please").message


def test_repeated_option() -> None:
    assert "given twice" in err("/arcs fix tier=small tier=large").message


def test_empty_option_value() -> None:
    assert "needs a value" in err("/arcs fix tier=").message


@pytest.mark.parametrize("verb", ["stop", "help"])
def test_verbs_without_options(verb: str) -> None:
    assert "takes no options" in err(f"/arcs {verb} tier=large").message


def test_revise_needs_instructions() -> None:
    assert "needs instructions" in err("/arcs revise").message
    assert "needs instructions" in err("/arcs revise   \n\n  ").message


def test_two_commands_in_one_comment() -> None:
    assert "one `/arcs` command per comment" in err("/arcs fix\n/arcs stop").message


def test_error_messages_never_echo_backticks_or_long_input() -> None:
    error = err("/arcs fix tier=`huge`" + "x" * 500)
    assert "'huge'" in error.message  # the value is quoted back, defused
    assert "`huge" not in error.message
    assert len(error.message) < 400


def test_huge_comment_is_fine() -> None:
    body = ("blah " * 20_000) + "\n/arcs fix tier=small\n" + ("> quoted\n" * 5_000)
    assert ok(body) == Command(verb="fix", tier="small")
