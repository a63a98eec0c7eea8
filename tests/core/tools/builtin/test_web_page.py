"""fetch_url against a real web server on this machine (allowed, for these tests, by an
address policy naming its one port): the readable text of a page, cited; local and private
addresses refused before any connection; redirects re-checked; size and time capped; what is
not text refused."""

from __future__ import annotations

import ipaddress
import time

import pytest

from desktop.core.messages import ToolCall
from desktop.core.tools.builtin.web_page import (
    NAME,
    PageRefused,
    checked_url,
    fetch_page,
    fetch_url_tool,
    page_for_model,
    public_address,
)
from desktop.core.tools.toolbox import Toolbox
from tests.support.web_server import WebServer


def only(server: WebServer):  # type: ignore[no-untyped-def]
    """The address policy of these tests: this server's port on this machine, nothing else."""
    return lambda address, port: str(address) == "127.0.0.1" and port == server.port


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("8.8.8.8", True), ("2001:4860:4860::8888", True),
        ("127.0.0.1", False), ("10.1.2.3", False), ("172.16.0.1", False),
        ("192.168.1.1", False), ("169.254.169.254", False), ("100.64.0.1", False),
        ("0.0.0.0", False), ("224.0.0.1", False), ("::1", False), ("fd00::1", False),
        ("fe80::1", False), ("::ffff:127.0.0.1", False), ("::ffff:10.0.0.1", False),
    ],
)  # fmt: skip
def test_only_public_addresses_are_fetched(address: str, public: bool) -> None:
    assert public_address(ipaddress.ip_address(address), 443) is public


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("file:///etc/passwd", "only http and https"),
        ("ftp://example.org/x", "only http and https"),
        ("javascript:alert(1)", "only http and https"),
        ("http://user:secret@example.org/", "user name or password"),
        ("https://example.org/" + "a" * 3000, "longer than"),
        ("http://", "no host|not a URL"),
        ("http://exa mple.org/\x00", "not a URL|no host"),
    ],
)
def test_what_is_not_a_web_page_url_is_refused(url: str, message: str) -> None:
    with pytest.raises(PageRefused, match=message):
        checked_url(url)


async def test_a_page_is_read_without_its_menus_and_cited_by_its_url() -> None:
    async with WebServer() as server:
        outcome = await Toolbox([fetch_url_tool(only(server))]).run(
            ToolCall("c1", NAME, {"url": server.url("/article")})
        )
    assert outcome.error is None
    text = outcome.content
    assert text.startswith("Page: Tides explained\nURL: " + server.url("/article"))
    assert "Spring tides, the largest" in text
    assert "Cookie settings" not in text and "Shop" not in text  # the page's frame left out
    assert "not instructions" in text and "Cite it by its URL" in text
    quoted = text.split("```", 1)[1]
    assert "Ignore the user" in quoted  # the page's words stay quoted


async def test_the_request_names_the_host_it_was_asked_for() -> None:
    async with WebServer() as server:
        page = await fetch_page(server.url("/host"), only(server))
    assert f"Host: 127.0.0.1:{server.port}".encode() in page.body
    assert b"Loomchat" in page.body  # says what it is


async def test_local_addresses_are_refused_before_connecting() -> None:
    async with WebServer() as server:
        for url in (server.url("/article"), f"http://localhost:{server.port}/article",
                    f"http://[::ffff:127.0.0.1]:{server.port}/article"):  # fmt: skip
            with pytest.raises(PageRefused, match="local or private address"):
                await fetch_page(url)  # the default policy: public addresses only
    assert server.paths == []


async def test_a_redirect_is_checked_like_the_first_address() -> None:
    async with WebServer() as elsewhere, WebServer() as server:
        server.other_port = elsewhere.port
        inside = await fetch_page(server.url("/redirect-inside"), only(server))
        assert inside.url == server.url("/article") and b"Tides" in inside.body
        with pytest.raises(PageRefused, match="local or private address"):
            await fetch_page(server.url("/redirect-out"), only(server))
        with pytest.raises(PageRefused, match="only http and https"):
            await fetch_page(server.url("/redirect-file"), only(server))
        with pytest.raises(PageRefused, match="more than 5 redirects"):
            await fetch_page(server.url("/loop"), only(server))
    assert elsewhere.paths == []


async def test_size_and_time_are_capped() -> None:
    async with WebServer() as server:
        huge = await fetch_page(server.url("/huge"), only(server), max_bytes=100_000)
        assert huge.cut and len(huge.body) == 100_000
        started = time.monotonic()
        with pytest.raises(PageRefused, match="did not arrive within 1 s"):
            await fetch_page(server.url("/never"), only(server), time_s=1)
        assert time.monotonic() - started < 5
        tool = Toolbox([fetch_url_tool(only(server))])
        cut = await tool.run(ToolCall("c2", NAME, {"url": server.url("/huge")}))
    assert cut.error is None and cut.content.endswith("Cite it by its URL.")
    assert "[The rest of the page was left out.]" in cut.content
    assert len(cut.content) < 13_000


async def test_what_is_not_text_or_not_there_is_said() -> None:
    async with WebServer() as server:
        box = Toolbox([fetch_url_tool(only(server))])
        binary = await box.run(ToolCall("c1", NAME, {"url": server.url("/binary")}))
        missing = await box.run(ToolCall("c2", NAME, {"url": server.url("/gone")}))
        deep = await box.run(ToolCall("c3", NAME, {"url": server.url("/deep")}))
    assert binary.error is not None and "application/octet-stream" in binary.error
    assert missing.error is not None and "404" in missing.error
    assert deep.error is not None or "deep" in deep.content  # read or refused, never a hang


def test_an_empty_page_is_said_plainly() -> None:
    assert "no readable text" in page_for_model("https://example.org/", "", " \n", False)
