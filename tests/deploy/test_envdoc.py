"""bot.envdoc: the environment table is rendered from Settings, and docs/deploy.md carries it."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, SecretStr

from bot.envdoc import (
    BEGIN_MARKER,
    END_MARKER,
    FALLBACK_MEANINGS,
    env_names,
    field_docstrings,
    main,
    render_default,
    render_env_table,
    replace_block,
)
from bot.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY_DOC = ROOT / "docs" / "deploy.md"


class _Sample(BaseModel):
    documented: int = 3
    """Counts ``things`` | with a pipe."""

    bare: str | None = None

    secret: SecretStr | None = None
    """A secret."""


def test_docs_deploy_table_is_up_to_date() -> None:
    text = DEPLOY_DOC.read_text(encoding="utf-8")
    assert replace_block(text, render_env_table()) == text, (
        "docs/deploy.md is out of date: run python -m bot.envdoc --write docs/deploy.md"
    )


def test_every_setting_has_a_row_and_a_meaning() -> None:
    table = render_env_table()
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert len(rows) == len(Settings.model_fields)
    for name in Settings.model_fields:
        assert f"`ARCS_{name.upper()}`" in table
    for row in rows:
        assert row.count(" | ") == 2 and not row.endswith("|  |"), row
    # Fallbacks only for real fields (a renamed field must not leave a stale entry behind).
    assert set(FALLBACK_MEANINGS) <= set(Settings.model_fields)


def test_unprefixed_names_come_first() -> None:
    assert env_names("anthropic_api_key", {"anthropic_api_key": "ANTHROPIC_API_KEY"}) == [
        "ANTHROPIC_API_KEY",
        "ARCS_ANTHROPIC_API_KEY",
    ]
    assert "| `ANTHROPIC_API_KEY` / `ARCS_ANTHROPIC_API_KEY` | unset |" in render_env_table()


def test_docstrings_are_read_from_the_class_source() -> None:
    docs = field_docstrings(_Sample)
    assert docs == {"documented": "Counts ``things`` | with a pipe.", "secret": "A secret."}
    with pytest.raises(ValueError, match="bare"):
        render_env_table(_Sample, {})


def test_rows_escape_pipes_and_convert_literals(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(FALLBACK_MEANINGS, "bare", "Bare one.")
    table = render_env_table(_Sample, {})
    assert "| `ARCS_DOCUMENTED` | `3` | Counts `things` \\| with a pipe. |" in table
    assert "| `ARCS_BARE` | unset | Bare one. |" in table
    assert "| `ARCS_SECRET` | unset | A secret. |" in table


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (None, "unset"),
        (SecretStr("x"), "unset"),
        (True, "`true`"),
        (12.0, "`12`"),
        (0.5, "`0.5`"),
        ("auto", "`auto`"),
        (("a/", "b/"), "`a/`, `b/`"),
        (("a", "b", "c", "d", "e"), "`a`, `b`, `c`, … (5 patterns)"),
        ((), "none"),
        (Path.home() / ".arcs", "`~/.arcs`"),
        (Path("/srv/arcs"), "`/srv/arcs`"),
    ],
)
def test_render_default(value: object, shown: str) -> None:
    assert render_default(value) == shown


def test_replace_block_keeps_the_rest_and_needs_markers() -> None:
    text = f"intro\n{BEGIN_MARKER}\nold table\n{END_MARKER}\noutro\n"
    assert replace_block(text, "| new |\n") == f"intro\n{BEGIN_MARKER}\n| new |\n{END_MARKER}\noutro\n"
    with pytest.raises(ValueError, match="markers"):
        replace_block("no markers here", "| t |\n")


def test_main_check_and_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = tmp_path / "deploy.md"
    doc.write_text(f"# Doc\n{BEGIN_MARKER}\nstale\n{END_MARKER}\n", encoding="utf-8")
    assert main(["--check", str(doc)]) == 1
    assert "out of date" in capsys.readouterr().err
    assert main(["--write", str(doc)]) == 0
    assert main(["--check", str(doc)]) == 0
    assert render_env_table() in doc.read_text(encoding="utf-8")
    assert main(["--bogus"]) == 2
    assert main([]) == 0
    assert capsys.readouterr().out.startswith("| variable | default | meaning |")
