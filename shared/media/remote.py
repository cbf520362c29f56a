"""An image named by an http(s) URL (OpenAI `image_url` parts), fetched under the web-fetch rules.

The guarded Fetcher (shared/http/fetch.py) refuses addresses inside the house at every redirect hop and
cuts the body at a byte cap; here that cap is MEDIA_MAX_BYTES, and a body cut there is refused rather
than stored half. What came back must sniff as an image, whatever its Content-Type says.
"""

from __future__ import annotations

from shared.config import Settings
from shared.errors import PayloadTooLarge, UnsupportedMediaType
from shared.http.fetch import Fetcher
from shared.media import sniff


def fetch_image(settings: Settings, url: str, *, fetcher: Fetcher | None = None) -> bytes:
    """The image's bytes; FetchFailed, AddressRefused, PayloadTooLarge or UnsupportedMediaType otherwise."""
    fetcher = fetcher or Fetcher(settings)
    fetcher.max_bytes = settings.media_max_bytes
    page = fetcher.fetch(url)
    if page.truncated:
        raise PayloadTooLarge(f"The image at the URL is larger than {settings.media_max_bytes} bytes.")
    found = sniff.sniff(page.body[:sniff.HEAD_BYTES])
    if found.kind != "image":
        raise UnsupportedMediaType(f"The URL does not hold an image (its content is {found.mime}).")
    return page.body
