"""The readable text of a fetched page: HTML through trafilatura, PDF through pypdf, plain text as is.

HTML and PDF are parsed by untrusted bytes' rules: in a child process with a time limit and none of the
worker's environment (a parser that spins never holds the worker's GIL), on a body already cut at
WEB_FETCH_MAX_BYTES. Anything else is refused.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass

from shared.http.fetch import FetchFailed, Page, UnsupportedContent

HTML_TYPES = {"text/html", "application/xhtml+xml"}
TEXT_TYPES = {"text/plain", "text/markdown", "text/csv", "application/json", "text/xml", "application/xml"}
PDF_TYPES = {"application/pdf"}
PARSE_SECONDS = 20.0


@dataclass(frozen=True)
class Readable:
    """A page's title and text, already cut to the size the model is given."""

    title: str
    text: str
    cut: bool


def kind_of(page: Page) -> str:
    """'html', 'pdf' or 'text' from the declared type (sniffed when none); UnsupportedContent otherwise."""
    declared = page.content_type
    if declared in HTML_TYPES:
        return "html"
    if declared in PDF_TYPES:
        return "pdf"
    if declared in TEXT_TYPES:
        return "text"
    head = page.body[:512].lstrip().lower()
    if not declared or declared == "application/octet-stream":
        if head.startswith(b"%pdf"):
            return "pdf"
        if head.startswith((b"<!doctype html", b"<html")):
            return "html"
    raise UnsupportedContent(f"{page.url} is {declared or 'of an unknown type'}; "
                             "web_extract reads HTML, plain text and PDF only.")


def readable(page: Page, max_chars: int) -> Readable:
    """The page's title and text cut to max_chars characters."""
    kind = kind_of(page)
    if kind == "text":
        title, text = "", page.body.decode("utf-8", errors="replace")
    else:
        if kind == "pdf" and page.truncated:
            raise FetchFailed(f"{page.url} is a PDF larger than the fetch limit; it cannot be read in part.")
        title, text = _parse_in_child(kind, page)
    text = text.strip()
    return Readable(title.strip(), text[:max_chars], cut=page.truncated or len(text) > max_chars)


def _parse_in_child(kind: str, page: Page) -> tuple[str, str]:
    try:
        done = subprocess.run([sys.executable, "-m", "services.worker.web.readable", kind, page.url],
                              input=page.body, capture_output=True, timeout=PARSE_SECONDS, check=False,
                              env=_child_env())
    except subprocess.TimeoutExpired:
        raise FetchFailed(f"{page.url} took longer than {PARSE_SECONDS:g} s to read.") from None
    if done.returncode != 0:
        raise FetchFailed(f"{page.url} could not be read as {kind.upper()}.")
    answer = json.loads(done.stdout)
    return answer["title"], answer["text"]


def _child_env() -> dict[str, str]:
    """Only what the parser needs to start: none of the worker's settings or secrets reach it."""
    return {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
            "LANG": "C.UTF-8"}


def parse_html(body: bytes, url: str) -> tuple[str, str]:
    """Title and main text (Markdown-ish) of an HTML document."""
    import trafilatura

    html = body.decode("utf-8", errors="replace")
    meta = trafilatura.extract_metadata(html, default_url=url)
    text = trafilatura.extract(html, url=url, output_format="markdown", include_comments=False,
                               include_tables=True, favor_recall=True) or ""
    return (meta.title if meta is not None and meta.title else ""), text


def parse_pdf(body: bytes) -> tuple[str, str]:
    """Title and text of a PDF document, page after page."""
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(body))
    title = (reader.metadata.title if reader.metadata is not None else None) or ""
    return str(title), "\n\n".join(page.extract_text() or "" for page in reader.pages)


def main() -> None:
    """Child process: argv kind and url, the body on stdin, {"title", "text"} on stdout."""
    kind, url = sys.argv[1], sys.argv[2]
    body = sys.stdin.buffer.read()
    title, text = parse_pdf(body) if kind == "pdf" else parse_html(body, url)
    sys.stdout.write(json.dumps({"title": title, "text": text}))


if __name__ == "__main__":
    main()
