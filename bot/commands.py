"""``/arcs`` comment commands: a pure parser (no I/O; the worker posts replies).

The parsed value, :class:`~jobs.messages.Command`, lives with the messages (it travels in
``handle_command``); it is re-exported here.

Grammar (one command per comment, on a line of its own)::

    /arcs fix    [tier=0|small|medium|large|auto] [budget=0.50|$2] [iterations=N]
    /arcs retry  [same options as fix]
    /arcs stop
    /arcs apply                      (open a pull request with a partial fix ARCS did not publish)
    /arcs help                       (a bare "/arcs" means help too)
    /arcs revise <instructions>      (on an ARCS pull request; the instructions may continue
                                      on the following lines)

A command line starts with ``/arcs`` after at most three spaces of indentation (Markdown's rule:
four spaces make a code block). Lines inside fenced code blocks (backticks or tildes) and quoted
lines (``> /arcs fix``, e.g. when someone replies to a comment) are never commands, so quoting or
documenting a command does not run it. The prefix and the verb are case-insensitive.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import get_args

from jobs.messages import Command, Tier, Verb
from jobs.render import HELP_TEXT, MAX_BUDGET_USD, MAX_ITERATIONS  # one copy: the worker answers `/arcs help`

__all__ = [
    "HELP_TEXT",
    "MAX_BUDGET_USD",
    "MAX_ITERATIONS",
    "Command",
    "CommandError",
    "Tier",
    "Verb",
    "mention_pattern",
    "parse_command",
    "parse_mention",
    "parse_request",
]

VERBS: tuple[str, ...] = get_args(Verb)
TIERS: tuple[str, ...] = get_args(Tier)
OPTION_VERBS = frozenset({"fix", "retry"})
OPTIONS: tuple[str, ...] = ("tier", "budget", "iterations")

MAX_INSTRUCTIONS_CHARS = 8000
"""Revise instructions beyond this are cut (the worker sanitizes and truncates them again)."""

PREFIX = "/arcs"

USAGE = (
    "Usage: `/arcs fix [tier=0|small|medium|large|auto] [budget=$2] [iterations=N]`, "
    "`/arcs retry [same options]`, `/arcs stop`, `/arcs help`, "
    "`/arcs revise <instructions>` (on an ARCS pull request)."
)


@dataclass(frozen=True, slots=True)
class CommandError:
    """A comment that addresses ARCS but cannot be understood; ``message`` is posted as a reply."""

    message: str
    line: str


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_COMMAND = re.compile(r"^ {0,3}/arcs(?=\s|$)(.*)$", re.IGNORECASE)
_BUDGET = re.compile(r"^\$?(\d{1,7}(?:\.\d{1,4})?|\.\d{1,4})$")


def _prose_lines(body: str) -> list[tuple[int, str]]:
    """``(index, line)`` of every line outside code fences (quoted lines included)."""
    found: list[tuple[int, str]] = []
    fence: str | None = None
    for index, line in enumerate(body.splitlines()):
        opening = _FENCE.match(line)
        if fence is not None:
            # A fence closes with at least as many of the same character.
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = None
            continue
        if opening:
            fence = opening.group(1)
            continue
        found.append((index, line))
    return found


def _command_lines(body: str) -> list[tuple[int, str, str]]:
    """``(index, line, rest)`` for every command line outside code fences and quotes."""
    found: list[tuple[int, str, str]] = []
    for index, line in _prose_lines(body):
        match = _COMMAND.match(line)
        if match:
            found.append((index, line.strip(), match.group(1)))
    return found


def _suggest(word: str, choices: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(word.lower(), choices, n=1, cutoff=0.6)
    return f" Did you mean `{close[0]}`?" if close else ""


def _quote(text: str, limit: int = 40) -> str:
    # Echo user input back safely: no backticks (they would break the code span), bounded length.
    text = text.replace("`", "'")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _parse_budget(value: str) -> Decimal | str:
    match = _BUDGET.match(value)
    if not match:
        return f"`budget={_quote(value)}` is not an amount in US dollars (try `budget=0.50` or `budget=$2`)."
    try:
        amount = Decimal(match.group(1))
    except InvalidOperation:  # pragma: no cover - the pattern only admits valid decimals
        return f"`budget={_quote(value)}` is not an amount in US dollars."
    if amount <= 0:
        return "`budget` must be more than $0."
    if amount > MAX_BUDGET_USD:
        return f"`budget` can be at most ${MAX_BUDGET_USD} per request."
    return amount


def _parse_options(verb: Verb, tokens: list[str], line: str) -> Command | CommandError:
    values: dict[str, str] = {}
    for token in tokens:
        key, sep, value = token.partition("=")
        key = key.lower()
        if not sep:
            return CommandError(
                f"I did not understand `{_quote(token)}`: options look like `name=value`. {USAGE}", line
            )
        if key not in OPTIONS:
            return CommandError(
                f"Unknown option `{_quote(key)}`.{_suggest(key, OPTIONS)} "
                f"`/arcs {verb}` accepts `tier`, `budget` and `iterations`.",
                line,
            )
        if key in values:
            return CommandError(f"The option `{key}` is given twice.", line)
        if not value:
            return CommandError(f"The option `{key}` needs a value, e.g. `{key}=…`.", line)
        values[key] = value

    tier: Tier | None = None
    if "tier" in values:
        raw = values["tier"].lower()
        if raw not in TIERS:
            return CommandError(
                f"Unknown tier `{_quote(values['tier'])}`.{_suggest(raw, TIERS)} "
                "Tiers: `0`, `small`, `medium`, `large`, `auto`.",
                line,
            )
        tier = next(t for t in get_args(Tier) if t == raw)

    budget: Decimal | None = None
    if "budget" in values:
        parsed = _parse_budget(values["budget"])
        if isinstance(parsed, str):
            return CommandError(parsed, line)
        budget = parsed

    iterations: int | None = None
    if "iterations" in values:
        raw = values["iterations"]
        if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= MAX_ITERATIONS:
            return CommandError(
                f"`iterations={_quote(raw)}` must be a whole number from 1 to {MAX_ITERATIONS}.", line
            )
        iterations = int(raw)

    return Command(verb=verb, tier=tier, budget_usd=budget, iterations=iterations)


def parse_command(body: str) -> Command | CommandError | None:
    """Find and parse the ``/arcs`` command in a comment body.

    Returns ``None`` when the comment does not address ARCS (no command line outside code and
    quotes), a :class:`Command`, or a :class:`CommandError` whose message explains the problem.
    """
    found = _command_lines(body)
    if not found:
        return None
    index, line, rest = found[0]
    tokens = rest.split()
    verb_word = tokens[0].lower() if tokens else "help"
    if verb_word not in VERBS:
        return CommandError(
            f"Unknown command `/arcs {_quote(tokens[0])}`.{_suggest(verb_word, VERBS)} {USAGE}", line
        )
    verb = next(v for v in get_args(Verb) if v == verb_word)

    if verb == "revise":
        # Everything after the verb (this line and the following ones) is the instruction text.
        first = rest.split(None, 1)[1] if len(tokens) > 1 else ""
        following = body.splitlines()[index + 1 :]
        text = "\n".join([first, *following]).strip()
        if not text:
            return CommandError(
                "`/arcs revise` needs instructions, e.g. `/arcs revise keep the public API unchanged`.",
                line,
            )
        if len(text) > MAX_INSTRUCTIONS_CHARS:
            text = text[:MAX_INSTRUCTIONS_CHARS]
        return Command(verb="revise", instructions=text)

    if len(found) > 1:
        return CommandError("Please send one `/arcs` command per comment.", line)

    options = tokens[1:]
    if verb in OPTION_VERBS:
        return _parse_options(verb, options, line)
    if options:
        return CommandError(f"`/arcs {verb}` takes no options. {USAGE}", line)
    return Command(verb=verb)


# --- @mentions ---------------------------------------------------------------------------------

_QUOTE = re.compile(r"^ {0,3}>")
_CODE_SPAN = re.compile(r"`+[^`]*`+")
_NEGATIONS = frozenset({"not", "don't", "dont", "never", "no", "without", "cannot", "can't"})
_TRIM = ".,!?:;()[]\"'*_~"


def mention_pattern(handle: str) -> re.Pattern[str]:
    """``@handle`` (or ``@handle[bot]``) as a mention: not part of a longer name or an e-mail."""
    return re.compile(rf"(?<![\w@/.-])@{re.escape(handle)}(?:\[bot\])?(?![\w-])", re.IGNORECASE)


def mention_help(handle: str) -> str:
    """The short answer to a mention ARCS cannot read as exactly one command."""
    return (
        f"I am not sure what you are asking. Mention @{handle} with one command, e.g. "
        f"`@{handle} fix`, `@{handle} retry`, `@{handle} stop`, `@{handle} apply`, "
        f"`@{handle} revise <instructions>` or `@{handle} help` (the same as the `/arcs` commands)."
    )


def parse_mention(body: str, handle: str) -> Command | CommandError | None:
    """The command an ``@handle`` mention asks for ("@arcs fix this", "@arcs please retry
    budget=$2", "@arcs revise keep the API").

    ``None`` when the comment does not mention ``handle`` outside code, inline code and quotes.
    Exactly one command word (the ``/arcs`` verbs) after the mention is that command, its options
    (``name=value`` words) read as ``/arcs`` reads them; none, several different ones or a negation
    ("don't fix") is ambiguous: a :class:`CommandError` whose message is a short help (never a
    repair).
    """
    pattern = mention_pattern(handle)
    lines = body.splitlines()
    for index, line in _prose_lines(body):
        if _QUOTE.match(line):
            continue
        match = pattern.search(_CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line))
        if match is None:
            continue
        rest = line[match.end() :]
        words = [w.strip(_TRIM).lower() for w in rest.split()]
        verbs = list(dict.fromkeys(w for w in words if w in VERBS))
        where = line.strip()
        if len(verbs) != 1 or any(w in _NEGATIONS for w in words):
            return CommandError(mention_help(handle), where)
        verb = next(v for v in get_args(Verb) if v == verbs[0])
        if verb == "revise":
            after = rest.split(None, words.index("revise") + 1)
            first = after[-1] if len(after) > words.index("revise") + 1 else ""
            text = "\n".join([first, *lines[index + 1 :]]).strip()
            if not text:
                return CommandError(
                    f"`@{handle} revise` needs instructions, e.g. `@{handle} revise keep the API`.", where
                )
            return Command(verb="revise", instructions=text[:MAX_INSTRUCTIONS_CHARS])
        options = [token for token in rest.split() if "=" in token]
        if verb in OPTION_VERBS:
            return _parse_options(verb, options, where)
        if options:
            return CommandError(f"`@{handle} {verb}` takes no options. {USAGE}", where)
        return Command(verb=verb)
    return None


def parse_request(body: str, handle: str) -> Command | CommandError | None:
    """What a comment asks of ARCS: an ``/arcs`` command line (:func:`parse_command`) first, else an
    ``@handle`` mention (:func:`parse_mention`); ``None`` when it asks nothing."""
    parsed = parse_command(body)
    return parsed if parsed is not None else parse_mention(body, handle)
