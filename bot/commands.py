"""``/arcs`` comment commands: a pure parser (no I/O; the worker posts replies).

Grammar (one command per comment, on a line of its own)::

    /arcs fix    [tier=0|small|medium|large|auto] [budget=0.50|$2] [iterations=N]
    /arcs retry  [same options as fix]
    /arcs stop
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
from typing import Any, Literal, get_args

Verb = Literal["fix", "retry", "stop", "help", "revise"]
Tier = Literal["0", "small", "medium", "large", "auto"]

VERBS: tuple[str, ...] = get_args(Verb)
TIERS: tuple[str, ...] = get_args(Tier)
OPTION_VERBS = frozenset({"fix", "retry"})
OPTIONS: tuple[str, ...] = ("tier", "budget", "iterations")

MAX_BUDGET_USD = Decimal(1000)
"""A sanity bound on one request; the repository's policy (worker side) caps it further."""
MAX_ITERATIONS = 100
MAX_INSTRUCTIONS_CHARS = 8000
"""Revise instructions beyond this are cut (the worker sanitizes and truncates them again)."""

PREFIX = "/arcs"

USAGE = (
    "Usage: `/arcs fix [tier=0|small|medium|large|auto] [budget=$2] [iterations=N]`, "
    "`/arcs retry [same options]`, `/arcs stop`, `/arcs help`, "
    "`/arcs revise <instructions>` (on an ARCS pull request)."
)

HELP_TEXT = f"""ARCS commands (one per comment, on a line of its own):

- `/arcs fix [tier=…] [budget=…] [iterations=N]`: repair this failure or issue.
  `tier` is `0` (templates only, no model), `small`, `medium`, `large` or `auto` (default);
  `budget` is a spending cap in US dollars (`budget=0.50`, `budget=$2`);
  `iterations` caps the number of repair iterations.
- `/arcs retry [options]`: run the last repair again (options as for fix).
- `/arcs stop`: stop the repair running here.
- `/arcs revise <instructions>`: on an ARCS pull request, run the loop again on its branch with
  your instructions as review feedback.
- `/arcs help`: this message.

Only people with write, maintain or admin permission on the repository can run commands.
Maximum budget per request: ${MAX_BUDGET_USD}; maximum iterations: {MAX_ITERATIONS}."""


@dataclass(frozen=True, slots=True)
class Command:
    """A parsed command. Options are ``None`` when not given (the repository's policy decides)."""

    verb: Verb
    tier: Tier | None = None
    budget_usd: Decimal | None = None
    iterations: int | None = None
    instructions: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form (the budget as a string, so no float rounding creeps in)."""
        return {
            "verb": self.verb,
            "tier": self.tier,
            "budget_usd": str(self.budget_usd) if self.budget_usd is not None else None,
            "iterations": self.iterations,
            "instructions": self.instructions,
        }


@dataclass(frozen=True, slots=True)
class CommandError:
    """A comment that addresses ARCS but cannot be understood; ``message`` is posted as a reply."""

    message: str
    line: str


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_COMMAND = re.compile(r"^ {0,3}/arcs(?=\s|$)(.*)$", re.IGNORECASE)
_BUDGET = re.compile(r"^\$?(\d{1,7}(?:\.\d{1,4})?|\.\d{1,4})$")


def _command_lines(body: str) -> list[tuple[int, str, str]]:
    """``(index, line, rest)`` for every command line outside code fences and quotes."""
    found: list[tuple[int, str, str]] = []
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
