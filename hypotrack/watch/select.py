"""Which hooks a watched run gets: the gates, the hooks the named hypotheses declare, and any named hook."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hypotrack.errors import HypotrackError

GATES = "gates"
ALL = "all"


def hook_plan(hypotheses: Iterable[str] | str | None, hooks: Iterable[Any] | str | None, gates: bool,
              library: Any = None) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """(hook names in order, settings per hook): the gates first, then the hypotheses' hooks, then ``hooks``.

    ``hypotheses`` and ``hooks`` take a list of ids / names, or "all"."""
    from hypotrack.hooks import ALL_HOOKS

    names: list[str] = [GATES] if gates else []
    settings: dict[str, dict[str, Any]] = {}
    wanted = _as_list(hypotheses)
    if wanted:
        library = library or load_library()
        known = library.hypotheses
        ids = sorted(known) if wanted == [ALL] else wanted
        unknown = [h for h in ids if h not in known]
        if unknown:
            raise HypotrackError(f"watch(hypotheses=...): unknown hypothesis {', '.join(unknown)} "
                                 f"(known: {', '.join(sorted(known))})")
        for hypothesis_id in ids:
            hypothesis = known[hypothesis_id]
            names += list(hypothesis.hooks)
            for hook, values in hypothesis.hook_settings.items():
                settings.setdefault(hook, {}).update(values)
    extra = _as_list(hooks)
    names += list(ALL_HOOKS) if extra == [ALL] else extra
    unknown = [name for name in names if name not in ALL_HOOKS]
    if unknown:
        raise HypotrackError(f"watch(hooks=...): unknown hook {', '.join(unknown)} (known: {', '.join(ALL_HOOKS)})")
    return list(dict.fromkeys(names)), settings


def stop_names(stop_on: Iterable[str] | str | None, gates: bool) -> set[str]:
    """What ``stop_on`` stops on, checked: "gates", a gate's name, or the hypothesis a gate points to.

    A name no gate answers to would never stop anything, so it is refused (a typo such as "gate" included)."""
    from hypotrack.hooks.gates import GATE_HYPOTHESES

    listed = _as_list(stop_on) if isinstance(stop_on, (str, list, tuple, set, frozenset)) or stop_on is None else None
    if listed is None or not all(isinstance(name, str) for name in listed):
        raise HypotrackError(f"watch(stop_on={stop_on!r}): give \"gates\", a gate's name or a hypothesis id, or a list "
                             "of them")
    names = set(listed)
    if names and not gates:
        raise HypotrackError(f"watch(stop_on={sorted(names)}) with gates=False: only the gates stop training; "
                             "leave gates on or drop stop_on")
    known = {GATES, *GATE_HYPOTHESES, *GATE_HYPOTHESES.values()}
    unknown = sorted(name for name in names if name not in known)
    if unknown:
        listed = ", ".join(f"{gate} ({hypothesis})" for gate, hypothesis in GATE_HYPOTHESES.items())
        raise HypotrackError(f"watch(stop_on=...): {', '.join(map(repr, unknown))} names no gate, so it would never "
                             f"stop training; stop_on takes \"gates\" (any gate), a gate's name or the hypothesis it "
                             f"points to: {listed}")
    return names


def load_library():
    """The hypotheses the CLI would see from here (the shipped library plus the project's own)."""
    from hypotrack.definitions import Project
    from hypotrack.definitions import load_library as load

    library = load(Project.locate())
    library.raise_if_problems()
    return library


def _as_list(value: Iterable[str] | str | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)
