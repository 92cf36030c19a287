"""Core values with behaviour of their own: the scope filter of reads."""

from __future__ import annotations

import pytest

from cortex.core.model import Scope, ScopeFilter


@pytest.mark.parametrize(
    ("value", "scopes"),
    [("all", (Scope.PROJECT, Scope.GLOBAL)), ("project", (Scope.PROJECT,)), ("global", (Scope.GLOBAL,))],
)
def test_a_scope_filter_names_the_scopes_it_reads(value: str, scopes: tuple[Scope, ...]) -> None:
    assert ScopeFilter(value).scopes() == scopes
    assert ScopeFilter(value) == value  # the command line's strings convert both ways


def test_an_unknown_scope_filter_is_refused() -> None:
    with pytest.raises(ValueError, match="'both'"):
        ScopeFilter("both")
