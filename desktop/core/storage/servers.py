"""Servers kept by name: the settings' connection (which backend, where, which model, how it
is reached) saved under a name the person chooses, so that a conversation or a preset can
say which one it talks to ("Laptop", "GPU box"). One is connected at a time: the settings'
own connection fields are the one in use, and choosing a saved server copies its fields
there. Each saved server's key is in the keychain under its own name."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from desktop.core.errors import LoomchatError
from desktop.core.storage.settings import CONNECTION_FIELDS, Settings

MAX_SERVERS = 50
MAX_NAME_CHARS = 80


class ServerError(LoomchatError):
    """A saved server that cannot be used or kept as asked."""


def key_name(server: str) -> str:
    """Where a saved server's key is kept in the keychain (beside the backends' own)."""
    return f"server:{server}"


def connection_of(settings: Settings) -> dict[str, Any]:
    """The settings' connection fields, as a saved server keeps them."""
    return {name: _copy(getattr(settings, name)) for name in CONNECTION_FIELDS}


def with_connection(settings: Settings, saved: Mapping[str, Any]) -> Settings:
    """These settings with a saved server's connection fields copied in."""
    known = {k: _copy(v) for k, v in saved.items() if k in CONNECTION_FIELDS}
    return replace(settings, **known)


def checked_name(name: str, servers: Mapping[str, object]) -> str:
    """`name` stripped, as it may be saved beside `servers`; else `ServerError` saying why."""
    name = name.strip()
    if not name or len(name) > MAX_NAME_CHARS:
        raise ServerError(f"A server's name is 1 to {MAX_NAME_CHARS} characters.")
    if name not in servers and len(servers) >= MAX_SERVERS:
        raise ServerError(f"{MAX_SERVERS} servers are kept at most: remove one first.")
    return name


def saved_as(settings: Settings, name: str) -> Settings:
    """These settings with their connection saved as `name` (replacing one of that name),
    and that server the one in use."""
    name = checked_name(name, settings.servers)
    servers = {**settings.servers, name: connection_of(settings)}
    return replace(settings, servers=servers, server=name)


def removed(settings: Settings, name: str) -> Settings:
    """These settings without the saved server `name` (the connection itself stays)."""
    servers = {k: v for k, v in settings.servers.items() if k != name}
    return replace(
        settings, servers=servers, server="" if settings.server == name else settings.server
    )


def on_server(settings: Settings, name: str) -> Settings:
    """These settings connected to the saved server `name` (its fields copied in)."""
    saved = settings.servers.get(name)
    if saved is None:
        raise ServerError(f"There is no saved server called {name!r}.")
    return replace(with_connection(settings, saved), server=name)


def in_use(settings: Settings) -> str:
    """The saved server the settings are connected to ("" where the connection was changed
    since, or was never saved)."""
    saved = settings.servers.get(settings.server)
    if saved is None:
        return ""
    now = connection_of(settings)
    same = all(saved.get(k, now[k]) == now[k] for k in CONNECTION_FIELDS)
    return settings.server if same else ""


def settings_for(settings: Settings, wanted: str) -> Settings | None:
    """The settings that connect to the saved server `wanted`, or None when they already
    do, or nothing is wanted, or no server of that name is saved any more."""
    if wanted not in settings.servers or in_use(settings) == wanted:
        return None
    return on_server(settings, wanted)


def _copy(value: Any) -> Any:
    return dict(value) if isinstance(value, dict) else value
