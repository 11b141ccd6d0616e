"""What diagnostics hooks, planted faults and treatments share: each is a unit that declares itself on its class,
and a catalogue is read off the classes of one package.

A unit's class carries a ``name`` and a ``Settings`` dataclass (one field per setting, with its default and a
docstring under it). `discover` imports every public module of the unit's package and collects the named
subclasses it defines: adding a unit is adding its module. Unit modules import torch inside their methods, so
the catalogues load without it (the spec loader and the fast CLI read them).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import inspect
import pkgutil
import textwrap
import typing
from pathlib import Path
from typing import Any, TypeVar

Unit = TypeVar("Unit", bound=type)


def discover(package: str, folder: Path, base: Unit, kind: str) -> dict[str, Unit]:
    """Every named subclass of ``base`` defined in a public module of ``package`` (in ``folder``), by name."""
    found: dict[str, Unit] = {}
    for info in sorted(pkgutil.iter_modules([str(folder)]), key=lambda i: i.name):
        if info.name.startswith("_") or info.name in ("base", "manifest"):
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, base) and getattr(value, "name", "")
                    and value.__module__ == module.__name__):
                if value.name in found:
                    raise RuntimeError(f"two {kind}s are named {value.name!r}: "
                                       f"{found[value.name].__module__} and {module.__name__}")
                found[value.name] = value
    return found


def settings_of(kind: str, name: str, settings: type, given: dict[str, Any]) -> Any:
    """The ``settings`` dataclass instance for ``given``; ValueError naming the accepted ones for an unknown key."""
    accepted = {f.name for f in dataclasses.fields(settings)}
    unknown = sorted(set(given) - accepted)
    if unknown:
        raise ValueError(f"{kind} {name!r} does not accept setting(s) {unknown}; accepted: {sorted(accepted)}")
    return settings(**given)


def setting_defaults(settings: type) -> dict[str, Any]:
    return {f.name: f.default for f in dataclasses.fields(settings)}


def setting_type(settings: type, field: dataclasses.Field) -> type:
    """A setting's type, None left out (a None default is allowed for a setting declared `X | None`)."""
    hint = typing.get_type_hints(settings)[field.name]
    options = [t for t in typing.get_args(hint) if t is not type(None)] or [hint]
    return options[0]


@functools.cache
def setting_docs(settings: type) -> dict[str, str]:
    """The docstring written under each field of a settings dataclass (the attribute-docstring convention)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(settings)))
    body = typing.cast(ast.ClassDef, tree.body[0]).body
    docs: dict[str, str] = {}
    for node, after in zip(body, body[1:]):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):
            docs[node.target.id] = " ".join(after.value.value.split())
    return docs
