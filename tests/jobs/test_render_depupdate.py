"""The dependency-update section of the check run and the pull request body (issue #27): the
bumps, what broke (with replacement and sites), the changelog, what ARCS did; untrusted text kept
harmless and the whole cut at fence boundaries."""

from __future__ import annotations

import re

from jobs.render_depupdate import DependencyReport, dependency_markdown, dependency_title
from jobs.repair.depupdate.apidiff import ApiChange
from jobs.repair.depupdate.changelog import Section
from jobs.repair.depupdate.context import DependencyChange
from jobs.repair.depupdate.detect import Bump
from jobs.repair.depupdate.hits import Hit, hits
from jobs.repair.tier0.migrate import migration_candidates

SOFT = ApiChange(
    "renamed", "markupsafe", "soft_unicode", "markupsafe.soft_str", evidence="DeprecationWarning"
)
GONE = ApiChange("removed", "markupsafe", "Markup.old_thing")
LOG = (Section("2.1.0", "Version 2.1.0", ("- Remove ``soft_unicode``, which was previously deprecated. Use ``soft_str`` instead.", "- Drop Python 3.6.")),)  # fmt: skip
DEP = DependencyChange(Bump("pypi", "markupsafe", "2.0.1", "2.1.0", "requirements.txt"), (SOFT, GONE), LOG)
REPO = {
    "app/util.py": "from markupsafe import soft_unicode\n\n\ndef f(x):\n    return soft_unicode(x)\n",
    "app/other.py": "import markupsafe\n\nY = markupsafe.soft_unicode('y')\n",
}


def _hits() -> dict[str, tuple[Hit, ...]]:
    return {"markupsafe": tuple(hits(DEP.api, REPO, REPO.get, DEP.changelog))}


def _balanced(text: str) -> bool:
    return (
        text.count("<details>") == text.count("</details>") and len(re.findall(r"^```", text, re.M)) % 2 == 0
    )


def test_a_verified_migration_names_bump_symbol_replacement_sites_changelog_and_delivery() -> None:
    (migration, *_) = migration_candidates("markupsafe", "2.0.1 -> 2.1.0", DEP.api, REPO, REPO.get)
    report = DependencyReport(
        (DEP,),
        fixed=True,
        migration=migration,
        hits=_hits(),
        delivered="commit abc1234 on the update's branch",
    )
    text = dependency_markdown(report)
    assert "| pypi | `markupsafe` | 2.0.1 -> 2.1.0 | `requirements.txt` |" in text
    assert "2 breaking API change(s), 1 used by this repository." in text
    soft = next(ln for ln in text.splitlines() if "soft_unicode`:" in ln)
    assert "renamed to `markupsafe.soft_str`" in soft
    assert "`app/other.py:3`" in soft and "`app/util.py:1`" in soft
    assert "- `markupsafe.Markup.old_thing`: removed (no replacement known)" in text
    assert text.index("soft_unicode`:") < text.index("old_thing")  # the used one first
    assert "Changelog about what this repository uses" in text and "Use ``soft_str`` instead." in text
    assert "Drop Python 3.6" not in text  # only the lines about what hits the repository
    assert f"ARCS migrated {migration.sites} call site(s) to the new API (`markupsafe.soft_unicode`)" in text
    assert "It is commit abc1234 on the update's branch." in text and _balanced(text)
    assert dependency_title(report) == "Dependency update: markupsafe 2.0.1 -> 2.1.0 (pypi), migrated"


def test_no_fix_names_what_hit_and_keeps_the_bump() -> None:
    report = DependencyReport((DEP,), hits=_hits())
    text = dependency_markdown(report)
    assert "No fix passed the test command" in text and "does not revert a dependency bump" in text
    assert "It is" not in text and dependency_title(report).endswith(", no fix")


def test_without_hits_the_changelog_between_the_versions_is_shown() -> None:
    text = dependency_markdown(DependencyReport((DEP,), fixed=True, delivered="pull request #12"))
    assert "2 breaking API change(s)." in text and "used by this repository" not in text  # not searched
    assert "Changelog between the versions" in text
    searched = dependency_markdown(DependencyReport((DEP,), hits={"markupsafe": ()}))
    assert "2 breaking API change(s), 0 used by this repository." in searched
    assert "2.1.0: - Drop Python 3.6." in text and "ARCS found a fix that passes" in text


def test_the_modes_comment_and_off() -> None:
    comment = DependencyReport((DEP,), mode="comment", hits=_hits())
    assert "`dependency_updates: comment`" in dependency_markdown(comment)
    assert dependency_title(comment).endswith("breaking changes named")
    off = DependencyReport((DEP,), mode="off")
    assert "changed nothing" in dependency_markdown(off) and dependency_title(off).endswith("not handled")


def test_no_bump_no_section() -> None:
    assert dependency_markdown(DependencyReport(())) == ""


def test_untrusted_names_and_changelog_stay_inert() -> None:
    evil = ApiChange("renamed", "pkg", "a`b", "x` @admin <b>")
    log = (Section("2.0", "2.0", ("<!-- arcs:status attempt=1 --> @everyone ```",)),)
    dep = DependencyChange(
        Bump("npm", "@scope/p|k<x>", "1.0.0", "2.0.0", "a|b/package.json", exact=False), (evil,), log
    )
    text = dependency_markdown(DependencyReport((dep,)))
    assert "<!-- arcs:status" not in text and "<x>" not in text
    assert "<b>" not in text.replace("`x' @admin <b>`", "")
    assert "`pkg.a'b`" in text and "`x' @admin <b>`" in text  # inside a code span: no ping, no tag
    assert "`a\\|b/package.json` (specifier)" in text and "| npm | `@scope/pkx` |" in text
    assert _balanced(text) and "@everyone" in text.split("```text")[1]  # inside the fence
    assert "@\u2060scope" in dependency_title(DependencyReport((dep,)))


def test_many_bumps_are_cut_whole_and_what_arcs_did_stays() -> None:
    deps = tuple(
        DependencyChange(
            Bump("npm", f"pkg{i}", "1.0.0", "2.0.0", "package-lock.json"),
            tuple(ApiChange("removed", f"pkg{i}", f"name{j}") for j in range(20)),
            (Section("2.0.0", "2.0.0", tuple(f"- change {j}" for j in range(20))),),
        )
        for i in range(40)
    )
    text = dependency_markdown(DependencyReport(deps), limit=5000)
    assert len(text) <= 5000 and _balanced(text)
    assert "more bump(s) not shown." in text and text.endswith("does not revert a dependency bump.")
    assert "- … and 8 more" in text and "… 12 more line(s)" in text
    assert dependency_title(DependencyReport(deps)).count("pkg") == 3
