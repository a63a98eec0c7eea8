"""How to reach a backend beyond its address: the certificate authorities to trust (a file
of one's own, else the system's store), a client certificate where the server asks for
one, headers a gateway or proxy needs, and a proxy only where the person chose one (never
the environment's unless asked). The token is apart: it is a secret, kept in the keychain.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass

import httpx

from desktop.core.errors import UsageError

_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}")
# Headers the client sets itself: one given here would be sent twice or break the request.
_RESERVED = {"host", "content-length", "content-type", "transfer-encoding", "connection",
             "authorization"}  # fmt: skip


class TransportError(UsageError):
    """A connection setting that cannot be used: a CA file that is not one, a bad header."""


@dataclass(frozen=True)
class Transport:
    ca_file: str = ""  # PEM certificate authorities trusted instead of the system's
    client_cert: str = ""  # PEM certificate (its key in it, or in client_key)
    client_key: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    proxy: str = ""  # "": none; "system": the environment's; else a proxy's URL

    @classmethod
    def of(cls, ca_file: str = "", client_cert: str = "", client_key: str = "",
           headers: Mapping[str, str] | None = None, proxy: str = "") -> Transport:  # fmt: skip
        return cls(ca_file, client_cert, client_key, tuple((headers or {}).items()), proxy)

    def checked_headers(self) -> dict[str, str]:
        out = {}
        for name, value in self.headers:
            if not _HEADER_NAME.fullmatch(name):
                raise TransportError(f"{name[:60]!r} is not a header name")
            if name.lower() in _RESERVED:
                raise TransportError(f"the header {name} is set by Loomchat itself")
            if any(c in value for c in "\r\n\x00") or len(value) > 8192:
                raise TransportError(f"the header {name} has a value that cannot be sent")
            out[name] = value
        return out

    def tls(self) -> ssl.SSLContext:
        """The TLS context: the CA file's authorities, else the system's store (with
        certifi's where the system has none); the client certificate if one is set."""
        try:
            if self.ca_file:
                context = ssl.create_default_context(cafile=self.ca_file)
            else:
                context = ssl.create_default_context()
                if not context.get_ca_certs():
                    import certifi

                    context.load_verify_locations(certifi.where())
            if self.client_cert:
                context.load_cert_chain(self.client_cert, self.client_key or None)
        except (OSError, ssl.SSLError, ValueError) as exc:
            raise TransportError(f"The certificate files cannot be used: {exc}") from None
        return context

    def proxy_url(self) -> str | None:
        if self.proxy in ("", "system"):
            return None
        if not self.proxy.startswith(("http://", "https://", "socks5://")):
            raise TransportError(f"{self.proxy[:100]!r} is not a proxy address (http://host:port)")
        return self.proxy


# The system's certificate authorities, no proxy, no headers of the person's.
DIRECT = Transport()


def make_client(api_key: str | None, timeout: httpx.Timeout,
                transport: Transport = DIRECT) -> httpx.AsyncClient:  # fmt: skip
    """The backend's HTTP client: requests go only where the settings say. Raises
    TransportError for settings that cannot be used."""
    headers = transport.checked_headers()
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return httpx.AsyncClient(
        timeout=timeout,
        headers=headers,
        verify=transport.tls(),
        proxy=transport.proxy_url(),
        trust_env=transport.proxy == "system",
    )
