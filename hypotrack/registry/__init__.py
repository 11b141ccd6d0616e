"""The SQLite (or any SQLAlchemy URL) registry of hypothesis state and history."""

from .engine import Registry, RegistryError, default_url, open_registry

__all__ = ["Registry", "RegistryError", "default_url", "open_registry"]
