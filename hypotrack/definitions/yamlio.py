"""Safe YAML reading that remembers the line of every key, and refuses what YAML allows but a
hypothesis file cannot mean (alias bombs, recursive aliases, unknown tags, control characters).

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

from hypotrack.cut_short import cut_short, yaml_unfinished_line
from hypotrack.text import has_control, printable

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


# An anchor may be reused (``<<: *defaults`` is common), but a document that expands past this
# many values is an alias bomb, not a hypothesis: refuse it before it exhausts memory.
MAX_VALUES = 20_000
MAX_DEPTH = 64  # no hypothesis nests this deep; deeper is a generated or hostile file (and Python's stack)
_TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep"

# Tags hypotrack reads; any other (``!!set``, ``!python/object``, ``!custom``) would be dropped
# silently or read as something the author did not mean, so it is a problem with its line.
_PLAIN_TAGS = {"tag:yaml.org,2002:" + name for name in
               ("map", "seq", "str", "int", "float", "bool", "null", "timestamp")}


class _TooBig(Exception):
    pass


def read_yaml(path: Path, text: str | None = None) -> YamlDoc:
    """Parse ``path`` safely; raise YamlSyntaxError with the offending line."""
    if text is None:
        raw = path.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw[:exc.start].count(b"\n") + 1
            raise YamlSyntaxError(path, line, f"not UTF-8 text: byte 0x{raw[exc.start]:02x} at offset "
                                              f"{exc.start} cannot be decoded; save the file as UTF-8") from None
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except RecursionError:  # the pure-Python parser runs out of stack before it reaches a limit of its own
        raise YamlSyntaxError(path, 1, _TOO_DEEP) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        if exc.problem and "nesting depth" in exc.problem:  # libyaml 0.2.6 stops at 1,000 levels itself
            raise YamlSyntaxError(path, line, _TOO_DEEP) from None
        unfinished = yaml_unfinished_line(text, exc.problem_mark.index if exc.problem_mark else None,
                                          exc.context_mark.line + 1 if exc.context_mark else None)
        if unfinished:
            raise YamlSyntaxError(path, unfinished, f"invalid YAML: {cut_short(unfinished)}") from None
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
    builder = _Builder(doc)
    try:
        doc.data = builder.build(node, ())
    except _TooBig:
        raise YamlSyntaxError(path, builder.line, f"the document expands to more than {MAX_VALUES} values "
                                                  "through its aliases (an alias bomb?)") from None
    return doc


class _Builder:
    """Turns composed nodes into Python values, recording each key's line and refusing what YAML
    allows but a hypothesis file cannot mean: recursive aliases, alias bombs and unknown tags."""

    def __init__(self, doc: YamlDoc):
        self.doc = doc
        self.constructor = _Loader("")
        self.values = 0
        self.line = 1
        self.open_nodes: set[int] = set()  # nodes being built: meeting one again is a recursive alias

    def build(self, node: yaml.Node, loc: Path_) -> Any:
        self.values += 1
        self.line = node.start_mark.line + 1
        if self.values > MAX_VALUES:
            raise _TooBig
        if len(self.open_nodes) >= MAX_DEPTH:
            self.doc.problems.append((self.line, _dotted(loc[:3]) + "...", _TOO_DEEP))
            return None
        if id(node) in self.open_nodes:
            self.doc.problems.append((self.line, _dotted(loc), "recursive alias: a value that contains itself"))
            return None
        plain = node.tag in _PLAIN_TAGS
        if not plain:  # reported once; the value is read as written, so no second complaint follows
            self.doc.problems.append((self.line, _dotted(loc), f"unsupported YAML tag '{node.tag}': "
                                                               "write the plain value"))
        if isinstance(node, yaml.ScalarNode):
            if not plain:
                return node.value
            try:
                value = self.constructor.construct_object(node, deep=True)
            except yaml.YAMLError as exc:
                self.doc.problems.append((self.line, _dotted(loc), f"cannot read value: {exc}"))
                return None
            if isinstance(value, str) and has_control(value):
                self.doc.problems.append((self.line, _dotted(loc), "contains control characters (a terminal escape "
                                                                   "sequence?): they would reach everyone's terminal"))
                return printable(value)
            return value
        self.open_nodes.add(id(node))
        try:
            if isinstance(node, yaml.MappingNode):
                return self._mapping(node, loc)
            return [self._item(index, item, loc) for index, item in enumerate(node.value)]
        finally:
            self.open_nodes.discard(id(node))

    def _item(self, index: int, item: yaml.Node, loc: Path_) -> Any:
        self.doc.lines[loc + (index,)] = item.start_mark.line + 1
        return self.build(item, loc + (index,))

    def _mapping(self, node: yaml.MappingNode, loc: Path_) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        merged: dict[Any, Any] = {}  # from ``<<:``; keys written out in the mapping win, as in YAML
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if key_node.tag == "tag:yaml.org,2002:merge":
                for key, value in self._merge_sources(value_node, loc, line):
                    merged.setdefault(key, value)
                continue
            key = self.build(key_node, loc)
            if isinstance(key, (dict, list)) or key is None and not isinstance(key_node, yaml.ScalarNode):
                self.doc.problems.append((line, str(loc[-1]) if loc else "", "a mapping key must be a plain value"))
                continue
            if key in out:
                self.doc.problems.append((line, _dotted(loc + (key,)), "duplicate key"))
            self.doc.lines[loc + (key,)] = line
            out[key] = self.build(value_node, loc + (key,))
        for key, value in merged.items():
            out.setdefault(key, value)
        return out

    def _merge_sources(self, value_node: yaml.Node, loc: Path_, line: int):
        sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
        for source in sources:
            if not isinstance(source, yaml.MappingNode):
                self.doc.problems.append((line, _dotted(loc + ("<<",)),
                                          "a merge key ('<<') takes a mapping or a list of mappings"))
                continue
            built = self.build(source, loc)
            for key, value in built.items():
                self.doc.lines.setdefault(loc + (key,), line)
                yield key, value


def _dotted(loc: Path_) -> str:
    parts: list[str] = []
    for part in loc:
        if isinstance(part, int):
            parts.append(f"[{part}]")
        else:
            parts.append(("." if parts else "") + str(part))
    return "".join(parts) or "(document)"


dotted = _dotted
