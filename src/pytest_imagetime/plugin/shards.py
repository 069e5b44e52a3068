"""Which shard this process runs: ``--imagetime-shard=K/N``, or ``auto`` from a batch system.

``auto`` (or ``auto/N``) reads the shard's index from the first batch system found, in this
order: a Slurm job array (``SLURM_ARRAY_TASK_ID``, numbered from ``SLURM_ARRAY_TASK_MIN``,
``SLURM_ARRAY_TASK_COUNT`` tasks), a Kubernetes Indexed Job (``JOB_COMPLETION_INDEX``, from 0;
the Job does not tell its pods how many there are, so it needs ``auto/N``), GitLab's
``parallel:`` (``CI_NODE_INDEX`` from 1, ``CI_NODE_TOTAL``). Slurm comes first because a
Slurm job submitted from a CI job inherits the CI job's variables. An explicit ``K/N`` never
reads the environment (an array may number other things, e.g. models x shards).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

ACCEPTED = ("give K/N with 1 <= K <= N (e.g. 2/8), or auto (or auto/N) to take K (and N) "
            "from SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX or CI_NODE_INDEX")


class ShardError(ValueError):
    """A shard option or a batch environment that cannot name one shard of N."""


@dataclass(frozen=True)
class Shard:
    k: int
    n: int
    source: str = ""  # where K and N came from, e.g. "SLURM_ARRAY_TASK_ID=3 of 1-8"

    def __str__(self) -> str:
        return f"{self.k}/{self.n}"


def parse_shard(raw: str, environ: Mapping[str, str]) -> Shard:
    """The shard that ``--imagetime-shard=raw`` names in this environment."""
    text = raw.strip()
    head, sep, tail = text.partition("/")
    if head.strip().lower() == "auto":
        count = None
        if sep:
            count = _int(tail)
            if count is None or count < 1:
                raise ShardError(ACCEPTED)
        return _from_environment(environ, count)
    k, n = _int(head), _int(tail)
    if not sep or k is None or n is None or not 1 <= k <= n:
        raise ShardError(ACCEPTED)
    return Shard(k, n)


def _int(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        return None


def _variable(environ: Mapping[str, str], name: str) -> int | None:
    raw = environ.get(name)
    if raw is None or not raw.strip():
        return None
    value = _int(raw)
    if value is None:
        raise ShardError(f"{name}={raw!r} in the environment is not an integer")
    return value


def _from_environment(environ: Mapping[str, str], count: int | None) -> Shard:
    for read in (_slurm, _kubernetes, _gitlab):
        found = read(environ)
        if found is None:
            continue
        k, n, source = found
        if n is None:
            if count is None:
                raise ShardError(f"{source} gives this shard's index but not how many shards "
                                 f"there are: give --imagetime-shard=auto/N")
            n = count
        elif count is not None and count != n:
            raise ShardError(f"auto/{count} names {count} shards, but {source} says {n}")
        if not 1 <= k <= n:
            raise ShardError(f"{source} is shard {k} of {n}, outside 1..{n}")
        return Shard(k, n, source)
    raise ShardError("auto: no batch system's shard index in the environment "
                     "(SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX, CI_NODE_INDEX); "
                     "give K/N")


Found = tuple[int, int | None, str]


def _slurm(environ: Mapping[str, str]) -> Found | None:
    task = _variable(environ, "SLURM_ARRAY_TASK_ID")
    if task is None:
        return None
    low = _variable(environ, "SLURM_ARRAY_TASK_MIN")
    high = _variable(environ, "SLURM_ARRAY_TASK_MAX")
    count = _variable(environ, "SLURM_ARRAY_TASK_COUNT")
    step = _variable(environ, "SLURM_ARRAY_TASK_STEP") or 1
    if low is None or high is None or count is None:
        raise ShardError("SLURM_ARRAY_TASK_ID is set without SLURM_ARRAY_TASK_MIN, _MAX and "
                         "_COUNT: give K/N")
    if step != 1 or high - low + 1 != count:
        raise ShardError(f"the Slurm array {low}-{high} ({count} tasks, step {step}) has gaps, "
                         f"so its task ids cannot number the shards: submit --array="
                         f"{low}-{low + count - 1}, or give K/N")
    return task - low + 1, count, f"SLURM_ARRAY_TASK_ID={task} of {low}-{high}"


def _kubernetes(environ: Mapping[str, str]) -> Found | None:
    index = _variable(environ, "JOB_COMPLETION_INDEX")
    if index is None:
        return None
    return index + 1, None, f"JOB_COMPLETION_INDEX={index}"


def _gitlab(environ: Mapping[str, str]) -> Found | None:
    index = _variable(environ, "CI_NODE_INDEX")
    if index is None:
        return None
    total = _variable(environ, "CI_NODE_TOTAL")
    if total is None:
        return index, None, f"CI_NODE_INDEX={index}"
    return index, total, f"CI_NODE_INDEX={index} of CI_NODE_TOTAL={total}"
