"""TLS to a backend with a certificate authority of one's own, a client certificate the
server demands, headers a gateway needs, and settings that cannot be used: against a real
local HTTPS server (the tests' own CA, made by trustme), end to end through the provider
and the connector as the app connects."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
import trustme

from desktop.core.calibration.store import CalibrationStore
from desktop.core.connector import Connector
from desktop.core.providers.base import ProviderError
from desktop.core.providers.discovery import Found
from desktop.core.providers.registry import make_provider
from desktop.core.providers.transport import Transport, TransportError
from desktop.core.storage.keychain import SecretStore
from desktop.core.storage.settings import Settings
from tests.support.replay_server import Canned, ReplayServer

MODELS = {"object": "list", "data": [{"id": "served-model", "object": "model",
                                      "owned_by": "vllm", "max_model_len": 4096}]}  # fmt: skip


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


def server_tls(ca: trustme.CA, client_ca: trustme.CA | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    if client_ca is not None:  # the server demands a certificate from this authority
        client_ca.configure_trust(context)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def files(ca: trustme.CA, folder: Path) -> Path:
    path = folder / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return path


async def test_a_custom_ca_and_a_header_reach_the_server(ca: trustme.CA, tmp_path: Path) -> None:
    async with ReplayServer(tls=server_tls(ca)) as server:
        server.route("GET", "/v1/models", Canned.json(MODELS))
        transport = Transport.of(ca_file=str(files(ca, tmp_path)),
                                 headers={"X-Gateway-Key": "g-123"})  # fmt: skip
        provider = make_provider("vllm", server.url, "served-model", api_key="tok",
                                 transport=transport)  # fmt: skip
        try:
            assert await provider.list_models() == ["served-model"]
        finally:
            await provider.aclose()
        untrusted = make_provider("vllm", server.url, "served-model")  # the system's CAs only
        try:
            with pytest.raises(ProviderError, match="its TLS certificate is not trusted"):
                await untrusted.list_models()
        finally:
            await untrusted.aclose()
    (request, *_) = server.requests
    assert request.headers["x-gateway-key"] == "g-123"
    assert request.headers["authorization"] == "Bearer tok"


async def test_a_client_certificate_the_server_demands(ca: trustme.CA, tmp_path: Path) -> None:
    client_ca = trustme.CA()
    person = client_ca.issue_cert("person@example.org")
    cert = tmp_path / "client.pem"
    person.private_key_and_cert_chain_pem.write_to_path(str(cert))
    async with ReplayServer(tls=server_tls(ca, client_ca)) as server:
        server.route("GET", "/v1/models", Canned.json(MODELS))
        ca_file = str(files(ca, tmp_path))
        with_cert = make_provider("openai", server.url, transport=Transport.of(ca_file, str(cert)))
        without = make_provider("openai", server.url, transport=Transport.of(ca_file))
        try:
            assert await with_cert.list_models() == ["served-model"]
            with pytest.raises(ProviderError):
                await without.list_models()
        finally:
            await with_cert.aclose()
            await without.aclose()


async def test_the_connector_connects_with_the_settings_and_says_what_is_wrong(
    ca: trustme.CA, tmp_path: Path
) -> None:
    async with ReplayServer(tls=server_tls(ca)) as server:
        server.route("GET", "/v1/models", Canned.json(MODELS))
        connector = Connector(SecretStore(), CalibrationStore(None), discover=no_servers,
                              has_bundled_model=lambda: False)  # fmt: skip
        base = Settings(backend="vllm", url=server.url, model="served-model")
        try:
            good = await connector.connect(Settings(**{**vars(base),
                                                       "ca_file": str(files(ca, tmp_path)),
                                                       "headers": {"X-Team": "blue"}}))  # fmt: skip
            assert good.ok, good.message
            assert good.capabilities.context_size == 4096
            bad_file = await connector.connect(
                Settings(**{**vars(base), "ca_file": str(tmp_path / "missing.pem")})
            )
            assert not bad_file.ok and "certificate files cannot be used" in bad_file.message
            bad_header = await connector.connect(
                Settings(**{**vars(base), "headers": {"X-Evil": "a\r\nHost: elsewhere"}})
            )
            assert not bad_header.ok and "cannot be sent" in bad_header.message
        finally:
            await connector.close()
    assert all(r.headers.get("x-team") == "blue" for r in server.requests)


async def no_servers() -> list[Found]:
    return []


@pytest.mark.parametrize(
    ("transport", "message"),
    [
        (Transport.of(headers={"Bad Name": "x"}), "not a header name"),
        (Transport.of(headers={"Authorization": "Bearer x"}), "set by Loomchat itself"),
        (Transport.of(proxy="ftp://proxy"), "not a proxy address"),
    ],
)
def test_settings_that_cannot_be_used_are_named(transport: Transport, message: str) -> None:
    with pytest.raises(TransportError, match=message):
        make_provider("openai", "http://127.0.0.1:9", transport=transport)


def test_a_proxy_is_used_only_when_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    plain = make_provider("openai", "https://example.org")
    system = make_provider("openai", "https://example.org", transport=Transport.of(proxy="system"))
    chosen = make_provider("openai", "https://example.org",
                           transport=Transport.of(proxy="http://10.0.0.5:3128"))  # fmt: skip
    assert plain.client._trust_env is False  # type: ignore[attr-defined]
    assert system.client._trust_env is True  # type: ignore[attr-defined]
    assert chosen.client._mounts  # type: ignore[attr-defined]
