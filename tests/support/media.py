"""Files for media tests: small real images, audio and PDFs, and attachments made as the api makes them."""

from __future__ import annotations

import os
from dataclasses import asdict

from shared.db import Database
from shared.media.inbox import save_bytes
from shared.models.attachments import Attachment
from shared.stores import attachments

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + os.urandom(64)
OGG_OPUS = b"OggS\x00\x02" + b"\x00" * 22 + b"OpusHead" + os.urandom(300)


def pdf_with_text(text: str) -> bytes:
    """A one-page PDF whose page shows `text` (Helvetica, uncompressed content stream)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def attach(settings, db: Database, user_id: str, session_id: str, data: bytes, name: str) -> Attachment:
    """Store `data` in the user's inbox and record it, as POST /v1/sessions/{id}/attachments does."""
    saved = save_bytes(settings, user_id, name, data)
    return attachments.add_attachment(db, user_id=user_id, session_id=session_id, **asdict(saved))
