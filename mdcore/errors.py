"""The two error types every layer raises; the CLI turns both into one line and exit 2."""
from __future__ import annotations


class InputError(ValueError):
    """Bad input: the message names the field and the offending value."""


class StrategyError(RuntimeError):
    """A strategy could not run or its result is unusable (device missing, capacity
    exceeded, scheduler timeout); the message says which and what to do."""
