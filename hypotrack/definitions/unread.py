"""One rule for settings that only some configurations read: given where nothing reads them, they are refused.

A field declares the condition under which it is read, in the schema itself:

    k: int = Field(10, json_schema_extra=read_only_when(steps=("mean_last", "mean_first")))

and `unread_settings` walks any validated model (criteria, triage signatures, `effect:`, the
experiment's `data:`, `lora:`...) for fields the file gave whose condition does not hold. A
value the run would silently ignore is a mistake the user believes in (a `k` on a slope, a
`truncation_side` with nothing truncated), so the loader reports it at its line.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

CONDITION_KEY = "read_only_when"
GIVEN = "(given)"  # a condition value: the sibling field has any value but null


def read_only_when(**conditions: tuple[Any, ...]) -> dict[str, Any]:
    """Schema metadata: the field is read only while every named sibling field has one of the given values."""
    return {CONDITION_KEY: {name: list(values) for name, values in conditions.items()}}


def unread_settings(model: BaseModel, loc: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    """(location, message) for every field given in ``model`` (or a model nested in it) that nothing reads."""
    fields = type(model).model_fields
    for name in model.model_fields_set:
        extra = fields[name].json_schema_extra if name in fields else None
        conditions = extra.get(CONDITION_KEY) if isinstance(extra, dict) else None
        for other, values in (conditions or {}).items():
            actual = getattr(model, other)
            if actual in values or (GIVEN in values and actual is not None):
                continue
            wanted = "given" if GIVEN in values else " or ".join(map(str, values))
            yield (*loc, name), (f"is read only with {other} {wanted}, and this has {other}: "
                                 f"{'null' if actual is None else actual}; remove it (nothing would read it)")
            break
    for name in fields:
        yield from _nested(getattr(model, name), (*loc, name))


def _nested(value: Any, loc: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], str]]:
    if isinstance(value, BaseModel):
        yield from unread_settings(value, loc)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _nested(item, (*loc, index))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _nested(item, (*loc, key))
