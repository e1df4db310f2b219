"""Commands where people talk (issue #28, item 3): ``/arcs`` in pull request review threads and
``@arcs`` mentions, answered in place.

Each comment is a signed delivery (the pinned ``@octokit/webhooks-examples`` payloads of
``pull_request_review_comment.created`` and ``issue_comment.created``, pointed at the strict GitHub
double) through the real webhook endpoint; the jobs run through the pipeline. A review-thread
command is answered by a reply in that thread (GitHub's "reply to a review comment" endpoint,
on the thread's first comment), edited in place; a reader gets no answer at all.
"""

from __future__ import annotations

from dataclasses import replace

from bot.commands import HELP_TEXT
from tests.bot import checks_world
from tests.bot.checks_world import READER, REPO, WRITER, World

world = checks_world.world  # the fixture


def _arcs_replies(w: World, root: int) -> list[dict[str, object]]:
    return [c for c in w.double.review_thread(REPO, root) if c["user"]["login"] == w.double.bot_login]


def test_a_fix_in_a_review_thread_is_answered_in_the_thread(world: World) -> None:
    world.repair.outcome = replace(world.repair.outcome, verdict="no_fix", fixed=False, patch="", files={})
    root = world.double.add_review_comment(REPO, world.pull, "This total looks off.", user=READER)
    answer = world.post(
        "pull_request_review_comment", world.review_comment("/arcs fix", user=WRITER, reply_to=root)
    )
    assert answer.status_code == 202 and answer.json()["status"] == "queued", answer.text
    assert world.drain() == [("handle_command", "no_fix")]
    assert len(world.repair.requests) == 1
    (reply,) = _arcs_replies(world, root)  # one reply, on the thread's first comment, edited in place
    assert reply["in_reply_to_id"] == root
    assert "ARCS did not find a fix" in str(reply["body"])
    assert world.double.mutations_matching("PATCH", r"/pulls/comments/\d+$")  # "working" -> the outcome
    # Nothing in the pull request's conversation: the answer is where the question was.
    assert world.double.comments_on(REPO, world.pull) == []


def test_help_and_an_ambiguous_mention_get_a_short_answer_never_a_repair(world: World) -> None:
    payload = world.review_comment("@arcs help", user=WRITER)
    world.post("pull_request_review_comment", payload)
    assert world.drain() == [("handle_command", "skipped")]
    (reply,) = _arcs_replies(world, payload["comment"]["id"])
    assert HELP_TEXT.splitlines()[0] in str(reply["body"])

    payload = world.review_comment("@arcs what do you think about this?", user=WRITER)
    world.post("pull_request_review_comment", payload)
    assert world.drain() == [("handle_command", "refused")]
    (reply,) = _arcs_replies(world, payload["comment"]["id"])
    assert "`@arcs fix`" in str(reply["body"])
    assert world.repair.requests == []


def test_a_reader_in_a_review_thread_gets_no_answer(world: World) -> None:
    before = len(world.double.mutations)
    payload = world.review_comment("@arcs fix this", user=READER)
    world.post("pull_request_review_comment", payload)
    assert world.drain() == [("handle_command", "refused")]
    assert world.writes(before) == [] and world.repair.requests == []


def test_revise_in_a_review_thread_of_an_arcs_pull_request(world: World) -> None:
    double = world.double
    bot = (double.bot_login, f"{double.bot_user_id}+{double.bot_login}@users.noreply.github.com")
    double.commit(REPO, {"app.py": "value_1 = 2\n"}, branch="arcs/fix/feature", base="feature", author=bot)
    arcs_pull = double.add_pull(REPO, "arcs/fix/feature", "feature", user=double.bot_login)
    payload = world.review_comment("@arcs revise keep value_1 an int", user=WRITER, pull=arcs_pull)
    world.post("pull_request_review_comment", payload)
    assert world.drain() == [("handle_command", "fixed"), ("publish_result", "published")]
    (plan,) = world.repair.requests
    assert plan.instructions == "keep value_1 an int"
    (reply,) = _arcs_replies(world, payload["comment"]["id"])
    assert "is running" in str(reply["body"])


def test_a_mention_in_a_pull_request_comment_runs_the_command(world: World) -> None:
    world.post("issue_comment", world.pr_comment("@arcs fix this please", user=WRITER))
    assert world.drain() == [("handle_command", "fixed"), ("publish_result", "published")]
    assert len(world.repair.requests) == 1
