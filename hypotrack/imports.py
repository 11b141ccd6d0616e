"""Import user code by 'pkg.module:function' path, the way TRL users already write it."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

from hypotrack.errors import HypotrackError


def import_object(path: str, search_dir: str | Path | None = None, what: str = "function") -> Any:
    """Import ``pkg.module:name``; modules beside the experiment file (``search_dir``) are importable."""
    if ":" not in path:
        raise HypotrackError(f"{what} {path!r} must look like 'pkg.module:function'")
    module_name, attribute = path.rsplit(":", 1)
    if search_dir is not None and str(search_dir) not in sys.path:
        sys.path.insert(0, str(search_dir))
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise HypotrackError(f"{what} {path!r}: cannot import module {exc.name!r} "
                             f"(looked on sys.path and beside the experiment file in {search_dir})") from None
    except SystemExit as exc:  # a script's `sys.exit()` at import must not end hypotrack silently
        raise HypotrackError(f"{what} {path!r}: importing {module_name} called sys.exit({exc.code!r}); code that "
                             "runs as a script belongs under `if __name__ == \"__main__\":`") from None
    except Exception as exc:  # noqa: BLE001 - user code may fail at import in any way
        raise HypotrackError(f"{what} {path!r}: importing {module_name} failed: {type(exc).__name__}: {exc}") from None
    try:
        obj = getattr(module, attribute)
    except AttributeError:
        raise HypotrackError(f"{what} {path!r}: module {module_name} has no attribute {attribute!r}") from None
    if not callable(obj):
        raise HypotrackError(f"{what} {path!r} is not callable")
    return obj
