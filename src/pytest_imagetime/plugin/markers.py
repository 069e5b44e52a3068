"""Markers on items, for both suites: names the data brings are registered as they appear."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pytest


class Markers:
    """The markers of one session: the names pytest knows, and one marker object a name."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.known = {line.split(":", 1)[0] for line in config.getini("markers")}
        self._shared: dict[str, pytest.MarkDecorator] = {}

    def add(self, item: pytest.Item, names: Iterable[str], describe: Callable[[str], str]
            ) -> None:
        """Mark ``item``. A name pytest does not know yet (a team's own domain, a category
        of the data) is registered first, so that ``--strict-markers`` holds; every item that
        carries a name shares its one marker object."""
        for name in names:
            decorator = self._shared.get(name)
            if decorator is None:
                if name not in self.known:
                    self.config.addinivalue_line("markers", f"{name}: {describe(name)}")
                    self.known.add(name)
                decorator = self._shared[name] = getattr(pytest.mark, name)
            item.add_marker(decorator)
