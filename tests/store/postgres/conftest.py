"""The real PostgreSQL server of tests/support/postgres.py for these tests."""

from tests.support.postgres import postgres_dsn, team_dsn

__all__ = ["postgres_dsn", "team_dsn"]
