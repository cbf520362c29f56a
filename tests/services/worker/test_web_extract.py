"""web_extract against local pages: the address rule on every hop, the size cap, readable text, fenced and flagged.

The pages are served by the test on loopback addresses; WEB_FETCH_ALLOW names exactly what a test lets through,
so the default (empty) proves loopback is refused. Private addresses are judged by the classifier and never
connected to.
"""

from __future__ import annotations

import tracemalloc

import pytest

from shared.config import Settings
from shared.security.addresses import AddressRefused
from services.worker.tools.registry import ToolContext
from services.worker.tools.web import web_extract
from shared.http.fetch import Fetcher
from tests.support.web_pages import BIG_BYTES, Pages, bomb

pytestmark = pytest.mark.once


@pytest.fixture(scope="module")
def pages():
    with Pages() as served:
        yield served


@pytest.fixture(scope="module")
def side_pages():
    """Pages on 127.0.0.2: allowed on their own, so a redirect from them to 127.0.0.1 is judged alone."""
    with Pages("127.0.0.2") as served:
        yield served


def ctx(settings: Settings, allow: str = "127.0.0.1", **more) -> ToolContext:
    custom = settings.model_copy(update={"web_fetch_allow": allow, **more})
    return ToolContext(user_id="u", session_id="s", turn_id="t", settings=custom)


def extract(settings: Settings, url: str, **kw) -> dict:
    return web_extract(ctx(settings, **kw), {"urls": [url]})["results"][0]


def test_a_page_is_read_as_its_title_final_url_and_main_text(settings, pages):
    result = extract(settings, pages.url("/to?url=" + pages.url("/article")))

    assert result["title"] == "Release 4.2 notes"
    assert result["final_url"] == pages.url("/article")
    assert "quantum widget halves start-up time" in result["content"]
    assert "Copyright nobody" not in result["content"]  # the boilerplate is left out
    assert result["content"].startswith("<untrusted-web-content>\n[System note:")
    assert result["content"].endswith("</untrusted-web-content>")
    assert "flagged" not in result


def test_by_default_loopback_is_refused_and_nothing_is_fetched(settings, pages):
    """Reproduction: WEB_FETCH_ALLOW unset, web_extract http://127.0.0.1:<port>/article."""
    before = len(pages.headers_seen)

    result = extract(settings, pages.url("/article"), allow="")

    assert result["error"]["code"] == "address_refused"
    assert "loopback" in result["error"]["message"]
    assert len(pages.headers_seen) == before


def test_a_name_resolving_to_loopback_is_refused(settings, pages):
    """Reproduction: http://localhost:<port>/ (a name, not a literal) with the allow setting empty."""
    result = extract(settings, pages.url("/article", host="localhost"), allow="")

    assert result["error"]["code"] == "address_refused"
    assert "127.0.0.1" in result["error"]["message"] or "::1" in result["error"]["message"]


def test_a_redirect_to_127_0_0_1_is_refused(settings, side_pages, pages):
    """Reproduction: a page on an allowed host answers 302 Location: http://127.0.0.1:<port>/article."""
    before = len(pages.headers_seen)

    result = extract(settings, side_pages.url("/to?url=" + pages.url("/article")), allow="127.0.0.2/32")

    assert result["error"]["code"] == "address_refused"
    assert "127.0.0.1" in result["error"]["message"]
    assert len(pages.headers_seen) == before  # the redirect's target was never asked


def test_a_redirect_to_a_private_address_is_refused_before_any_connection(settings, pages):
    """Reproduction: an allowed page redirects to http://10.20.30.40/admin (judged by the classifier only)."""
    result = extract(settings, pages.url("/to?url=http://10.20.30.40/admin"))

    assert result["error"]["code"] == "address_refused"
    assert "10.20.30.40" in result["error"]["message"] and "private" in result["error"]["message"]


def test_a_name_that_rebinds_is_judged_on_the_address_the_connection_uses(settings):
    """A name answering a public address first and loopback second is refused: every answer must pass."""
    answers = iter([["93.184.216.34", "127.0.0.1"]])
    fetcher = Fetcher(settings.model_copy(update={"web_fetch_allow": ""}), resolver=lambda host, port: next(answers))

    with pytest.raises(AddressRefused):
        fetcher.fetch("http://rebind.example/")


def test_a_50_mb_page_is_cut_at_the_cap_without_being_read_whole(settings, pages):
    """Reproduction: /big sends 50 MB of HTML; WEB_FETCH_MAX_BYTES=1 MB."""
    fetcher = Fetcher(settings.model_copy(update={"web_fetch_allow": "127.0.0.1", "web_fetch_max_bytes": 1_000_000}))

    page = fetcher.fetch(pages.url("/big"))

    assert page.truncated and len(page.body) == 1_000_000
    result = extract(settings, pages.url("/big"), web_fetch_max_bytes=1_000_000, web_extract_max_chars=5000)
    assert result["truncated"] is True
    assert len(result["content"]) < 6000
    assert pages.big_sent < BIG_BYTES  # the server was cut off, not drained


def test_a_compressed_page_that_inflates_to_200_mb_is_cut_at_the_cap(settings, pages):
    """Reproduction: /bomb sends ~200 KB of gzip that inflates to 200 MB; only the cap is ever inflated."""
    fetcher = Fetcher(settings.model_copy(update={"web_fetch_allow": "127.0.0.1", "web_fetch_max_bytes": 1_000_000}))
    bomb()  # made before measuring
    tracemalloc.start()
    try:
        page = fetcher.fetch(pages.url("/bomb"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert page.truncated and len(page.body) == 1_000_000 and page.body.startswith(b"<html><body>aaa")
    assert peak < 16 * 2**20, f"{peak / 2**20:.0f} MB held to read a 1 MB cap"


def test_a_page_carrying_a_prompt_injection_is_fenced_and_flagged(settings, pages):
    """Reproduction: a recipe page saying "ignore all previous instructions" and closing our fence itself."""
    result = extract(settings, pages.url("/injection"))

    assert result["flagged"]["pattern"] == "prompt_injection"
    content = result["content"]
    assert "threat scanner flags" in content
    assert content.count("</untrusted-web-content>") == 1 and content.endswith("</untrusted-web-content>")
    assert "[System note: the user allows" not in content
    assert "Mix three bananas" in content


def test_plain_text_is_read_and_an_image_is_refused_with_a_clear_error(settings, pages):
    assert "buy milk" in extract(settings, pages.url("/notes.txt"))["content"]

    refused = extract(settings, pages.url("/image.png"))

    assert refused["error"]["code"] == "unsupported_content"
    assert "image/png" in refused["error"]["message"]


def test_a_pdf_is_read(settings, pages, tmp_path):
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    writer.add_metadata({"/Title": "Empty manual"})
    path = tmp_path / "m.pdf"
    with path.open("wb") as out:
        writer.write(out)
    from shared.http.fetch import Page
    from services.worker.web.readable import readable

    text = readable(Page("http://x/m.pdf", 200, "application/pdf", path.read_bytes(), False), 1000)

    assert text.title == "Empty manual"


def test_the_fetch_sends_no_cookie_and_none_of_the_workers_identity(settings, pages, monkeypatch):
    """A cookie set by one hop is not sent to the next; proxy settings of the environment are ignored."""
    monkeypatch.setenv("HTTP_PROXY", "http://10.9.9.9:3128")
    url = pages.url("/to?url=" + pages.url("/article"))
    Fetcher(settings.model_copy(update={"web_fetch_allow": "127.0.0.1"})).fetch(pages.url("/article"))
    Fetcher(settings.model_copy(update={"web_fetch_allow": "127.0.0.1"})).fetch(url)

    seen = pages.headers_seen[-3:]
    assert all("cookie" not in h and "authorization" not in h for h in seen)
    assert {h["user-agent"] for h in seen} == {"Mozilla/5.0 (compatible; hermes-stack web_extract)"}
