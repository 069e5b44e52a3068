"""Which process runs which items, decided up front so each can generate ahead.

Under pytest-xdist the default scheduler hands items to workers a few at a time, so a worker
cannot know what to generate next. With ImageTime active, ``-n N`` (``--dist load``) instead
uses ``ImagetimeScheduling``: the case items are split into N balanced shares (round-robin
in collection order) and each worker receives one whole share at once; the worker computes
the same share from its own collection and pipelines it. Other tests keep xdist's
per-module scopes; an explicit other ``--dist`` mode is left alone (items then run without
look-ahead).
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Mapping
from typing import Any

import pytest

from ..cases.model import Case


class LimitWarning(pytest.PytestWarning):
    """--imagetime-limit is below the number of domains: some domains are not run."""


def share_of(position: int, shares: int) -> int:
    """The share of the item at ``position`` among the case items (round-robin: balanced
    in count and mixed over domains and models)."""
    return position % max(1, shares)


def shard_cases(case_ids: list[str], shard: tuple[int, int]) -> set[str]:
    """The case ids of shard K of N: round-robin over the sorted distinct ids, so shards are
    balanced, disjoint, cover every case, and do not depend on collection order. Every model
    of a case lands in the same shard."""
    k, n = shard
    ordered = sorted(set(case_ids))
    return {case_id for i, case_id in enumerate(ordered) if i % n == k - 1}


def limited_cases(domains: Mapping[str, str], limit: int) -> list[str]:
    """At most ``limit`` case ids of ``domains`` (case id -> domain), round-robin over the
    domains in name order, each domain's cases ordered by a hash of their id: the same cases
    on every machine, process and run, and every domain's first case before any second."""
    by_domain: dict[str, list[str]] = {}
    for case_id, domain in domains.items():
        by_domain.setdefault(domain, []).append(case_id)
    queues = [sorted(ids, key=_stable_rank) for _, ids in sorted(by_domain.items())]
    chosen: list[str] = []
    for rank in range(max(map(len, queues), default=0)):
        chosen += [ids[rank] for ids in queues if rank < len(ids)][:limit - len(chosen)]
    return chosen


def keep_limited(config: pytest.Config, items: list[pytest.Item], limit: int) -> list[str]:
    """Keep the items of the ``limited_cases`` of the selection's cases (others are
    deselected) and return those case ids, for a shard to split."""
    cases: dict[str, Case] = {}
    for item in items:
        case = getattr(item, "case", None)
        if isinstance(case, Case):
            cases[case.id] = case
    limited = limited_cases({i: c.domain for i, c in cases.items()}, limit)
    chosen = set(limited)
    others = [i for i in items if _case_id(i) not in chosen and _case_id(i) in cases]
    if others:
        config.hook.pytest_deselected(items=others)
        items[:] = [i for i in items if _case_id(i) in chosen or _case_id(i) not in cases]
    every = len({c.domain for c in cases.values()})
    if limit < every:
        warnings.warn(LimitWarning(
            f"--imagetime-limit={limit} covers {limit} of the selection's {every} domains "
            f"(their first cases); give {every} or more to cover every domain"), stacklevel=1)
    return limited


def _case_id(item: pytest.Item) -> str | None:
    case = getattr(item, "case", None)
    return case.id if isinstance(case, Case) else None


def _stable_rank(case_id: str) -> tuple[str, str]:
    # Python's hash() of a str changes with PYTHONHASHSEED: sha256 is the same everywhere.
    return hashlib.sha256(case_id.encode()).hexdigest(), case_id


def is_case_nodeid(nodeid: str) -> bool:
    path = nodeid.split("::", 1)[0]
    return "::" in nodeid and path.endswith((".yaml", ".yml"))


def make_scheduler_class() -> type:
    """The scheduler, built only where xdist is installed (it subclasses xdist's own)."""
    from xdist.scheduler import LoadScopeScheduling

    class ImagetimeScheduling(LoadScopeScheduling):  # type: ignore[misc]
        """One whole, balanced share of the case items per worker, sent up front."""

        def __init__(self, config: Any, log: Any = None) -> None:
            super().__init__(config, log)
            self._shares: dict[str, int] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if not is_case_nodeid(nodeid):
                return str(super()._split_scope(nodeid))
            if self._shares is None:
                cases = [n for n in self.collection or () if is_case_nodeid(n)]
                count = len(self.nodes)
                self._shares = {n: share_of(i, count) for i, n in enumerate(cases)}
            return f"imagetime-share-{self._shares[nodeid]}"

        def remove_node(self, node: Any) -> str | None:
            """As xdist's, except that the item a crashed worker was running is not sent to
            the next worker: LoadScopeScheduling requeues it, so an item that kills its
            worker would kill every worker in turn and be reported once per worker."""
            workload: dict[str, dict[str, bool]] = self.assigned_work.pop(node)
            pending = [(unit, nodeid) for unit in workload.values()
                       for nodeid, completed in unit.items() if not completed]
            if not pending:
                return None
            unit, crashitem = pending[0]
            unit[crashitem] = True  # reported once, by xdist, as the crashed item
            self.workqueue.update({scope: unit for scope, unit in workload.items()
                                   if not all(unit.values())})
            for other in self.assigned_work:
                self._reschedule(other)
            return crashitem

    return ImagetimeScheduling


class XdistHooks:
    """Registered only when pytest-xdist is present and ImageTime is active."""

    def pytest_xdist_make_scheduler(self, config: Any, log: Any) -> Any:
        if config.getvalue("dist") != "load":
            return None
        return make_scheduler_class()(config, log)

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["imagetime_shares"] = node.config.getvalue("dist") == "load"
