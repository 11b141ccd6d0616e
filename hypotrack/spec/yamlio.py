"""Safe YAML reading that remembers the line of every key.

Every loader error must name ``file:line``; pydantic only knows the path of a
bad value (``("criteria", "validated", 0, "threshold")``), so while composing
the document we record the line each path starts on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

try:  # the C parser is several times faster; fall back when libyaml is absent
    _Base = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Base = yaml.SafeLoader


class _Loader(_Base):  # type: ignore[misc,valid-type]
    """SafeLoader that reads ``1e-5`` as a float (YAML 1.1 insists on a dot)."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)

Path_ = tuple[Any, ...]


@dataclass
class YamlDoc:
    """A parsed document plus the line (1-based) where each key path starts."""

    path: Path
    data: Any
    lines: dict[Path_, int] = field(default_factory=dict)
    problems: list[tuple[int, str, str]] = field(default_factory=list)  # (line, key, message)

    def line_of(self, loc: Path_) -> int:
        """Line of the deepest recorded prefix of ``loc``."""
        loc = tuple(loc)
        while loc:
            if loc in self.lines:
                return self.lines[loc]
            loc = loc[:-1]
        return self.lines.get((), 1)


class YamlSyntaxError(Exception):
    def __init__(self, path: Path, line: int, message: str):
        super().__init__(f"{path}:{line}: {message}")
        self.path, self.line, self.message = path, line, message


def read_yaml(path: Path, text: str | None = None) -> YamlDoc:
    """Parse ``path`` safely; raise YamlSyntaxError with the offending line."""
    if text is None:
        text = path.read_text(encoding="utf-8")
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise YamlSyntaxError(path, line, f"invalid YAML: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(path, 1, f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    doc = YamlDoc(path=path, data=None)
    if node is None:
        doc.data = {}
        return doc
    doc.lines[()] = node.start_mark.line + 1
    doc.data = _build(node, (), doc, _Loader(""))
    return doc


def _build(node: yaml.Node, loc: Path_, doc: YamlDoc, constructor: _Loader) -> Any:
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _build(key_node, loc, doc, constructor)
            line = key_node.start_mark.line + 1
            if isinstance(key, (dict, list)):
                doc.problems.append((line, str(loc[-1]) if loc else "", "a mapping key must be a plain value"))
                continue
            if key in out:
                doc.problems.append((line, _dotted(loc + (key,)), "duplicate key"))
            doc.lines[loc + (key,)] = line
            out[key] = _build(value_node, loc + (key,), doc, constructor)
        return out
    if isinstance(node, yaml.SequenceNode):
        items = []
        for index, item in enumerate(node.value):
            doc.lines[loc + (index,)] = item.start_mark.line + 1
            items.append(_build(item, loc + (index,), doc, constructor))
        return items
    if node.tag == "tag:yaml.org,2002:merge" or not isinstance(node, yaml.ScalarNode):  # pragma: no cover
        return None
    try:
        return constructor.construct_object(node, deep=True)
    except yaml.YAMLError as exc:
        doc.problems.append((node.start_mark.line + 1, _dotted(loc), f"cannot read value: {exc}"))
        return None


def _dotted(loc: Path_) -> str:
    parts: list[str] = []
    for part in loc:
        if isinstance(part, int):
            parts.append(f"[{part}]")
        else:
            parts.append(("." if parts else "") + str(part))
    return "".join(parts) or "(document)"


dotted = _dotted
