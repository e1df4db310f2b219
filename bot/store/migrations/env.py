"""Alembic environment for the ARCS store.

ARCS runs migrations itself (``bot.store.open_store`` upgrades to head on open, holding a lock),
passing its open connection in ``config.attributes["connection"]``. For authoring a new revision
by hand::

    alembic -c bot/store/alembic.ini -x url=sqlite:///dev.db revision --autogenerate -m "what"
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine, pool

from bot.store.models import Base

target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things in place: batch mode copies the table.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def _main() -> None:
    config = context.config
    connection = config.attributes.get("connection")
    if isinstance(connection, Connection):
        _run(connection)
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("give the database URL: alembic -x url=... (or sqlalchemy.url in the ini)")
    if context.is_offline_mode():
        context.configure(url=url, target_metadata=target_metadata, literal_binds=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_engine(url, poolclass=pool.NullPool)
    try:
        with engine.connect() as conn:
            _run(conn)
            conn.commit()
    finally:
        engine.dispose()


_main()
