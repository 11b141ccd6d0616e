"""Turn library exceptions into one clear paragraph for the CLI edge."""

from __future__ import annotations


class HypotrackError(Exception):
    """A problem with the user's input or environment, explained in the message."""


def friendly_error(exc: BaseException) -> tuple[str | None, int]:
    from .registry.engine import RegistryError
    from .spec.loader import SpecError

    if isinstance(exc, SpecError):
        count = len(exc.problems)
        head = f"Error: {count} problem{'s' if count != 1 else ''} in the hypothesis/experiment files:"
        return head + "\n" + "\n".join(f"  {p}" for p in exc.problems), 1
    if isinstance(exc, (RegistryError, HypotrackError)):
        return f"Error: {exc}", 1
    from .registry.store import UnknownStatus

    if isinstance(exc, UnknownStatus):
        return f"Error: {exc}", 2
    return None, 1
