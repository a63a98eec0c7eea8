"""The local API's bearer token: made on first use, kept in the keychain (the app and
`desktop serve` share it)."""

from __future__ import annotations

import secrets

from desktop.core.storage.keychain import SecretStore

TOKEN_NAME = "api_token"


def api_token(store: SecretStore, new: bool = False) -> str:
    """The kept token, or a new one kept from now on."""
    token = None if new else store.get(TOKEN_NAME)
    if not token:
        token = secrets.token_urlsafe(32)
        store.set(TOKEN_NAME, token)
    return token
