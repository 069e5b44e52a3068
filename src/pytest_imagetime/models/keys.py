"""The API key of a hosted image backend: which environment variable holds it, its value, and
the error that names an empty variable, worded for a run of one hosted backend or of several
(where ``--imagetime-model-key-env``, which names one variable for all of them, is no help).
"""

from __future__ import annotations

import os

from .base import ModelOptions

# ModelOptions' key variable when --imagetime-model-key-env is not given: it names OpenAI's
# key, so the other hosted backends read their provider's own variable instead.
OPENAI_KEY_ENV = ModelOptions().key_env

KEY_ENV_HINT = ("or --imagetime-model-key-env=NAME for another variable, 'none' for a server "
                "without keys")


def key_env_named(options: ModelOptions) -> bool:
    """Whether the user named the key variable (``--imagetime-model-key-env``)."""
    return options.key_env != OPENAI_KEY_ENV


def key_env_of(options: ModelOptions, own: str, *fallbacks: str) -> str | None:
    """The variable holding the key: the one the user named, else the provider's own (the
    first of ``own, *fallbacks`` that is set, so that the message names ``own`` when none
    is); None for a server without keys."""
    if key_env_named(options):
        return options.key_env
    return next((name for name in (own, *fallbacks) if os.environ.get(name)), own)


class MissingKey(ValueError):
    """A backend's key variable is empty. ``str()`` words it for a run of one hosted backend;
    ``worded(several=True)`` for a run of several."""

    def __init__(self, who: str, variables: tuple[str, ...], named: bool) -> None:
        # Kept as the args, so that the error survives pickling (a drawing process).
        super().__init__(who, variables, named)
        self.who = who
        self.variables = variables
        self.named = named  # the user named the variable with --imagetime-model-key-env

    def __str__(self) -> str:
        return self.worded(several=False)

    def worded(self, *, several: bool) -> str:
        """The message; ``several``: the run has more than one hosted backend, so the one
        option that names a variable for all of them is not the way out."""
        needs = (f"{self.who} needs an API key in the environment variable "
                 f"{' or '.join(self.variables)}")
        if not several:
            return f"{needs} ({KEY_ENV_HINT})"
        if self.named:
            return (f"{needs} (--imagetime-model-key-env names that one variable for every "
                    f"hosted backend of this run: leave it out and export each backend's own "
                    f"key variable)")
        return f"{needs} (export it: each hosted backend of this run reads its own variable)"


def read_key(key_env: str | None, who: str, also: tuple[str, ...] = (), *,
             named: bool = False) -> str | None:
    """The key in ``key_env``; None for a server without keys. MissingKey naming the
    variable, and the ``also`` variables that would have been read too, when it is empty;
    ``named``: the user named ``key_env``."""
    if key_env is None:
        return None
    key = os.environ.get(key_env)
    if not key:
        raise MissingKey(who, (key_env, *also), named)
    return key
