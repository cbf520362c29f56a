"""Archives are stored, never extracted; this bounded look at a ZIP's directory refuses a zip bomb anyway.

Only the central directory is read (its size is bounded by the file's, which the upload cap bounds), never
a member's data, so the check costs the same for an honest archive and a bomb.
"""

from __future__ import annotations

import zipfile
from typing import BinaryIO

from shared.errors import UnsupportedMediaType

MAX_MEMBERS = 10_000
MAX_EXPANDED_BYTES = 2 * 1024**3
MAX_RATIO = 100  # expanded / compressed over the whole archive, once it would expand past RATIO_FLOOR
RATIO_FLOOR = 100 * 1024**2


def check_zip(fh: BinaryIO, size: int) -> None:
    """UnsupportedMediaType for an archive that is unreadable or would expand beyond the bounds."""
    try:
        with zipfile.ZipFile(fh) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise UnsupportedMediaType(f"The ZIP archive cannot be read ({type(exc).__name__}).") from None
    if len(members) > MAX_MEMBERS:
        raise UnsupportedMediaType(f"The ZIP archive holds {len(members)} entries; at most {MAX_MEMBERS} are accepted.")
    expanded = sum(member.file_size for member in members)
    if expanded > MAX_EXPANDED_BYTES or (expanded > RATIO_FLOOR and expanded > MAX_RATIO * max(size, 1)):
        raise UnsupportedMediaType(f"The ZIP archive would expand to {expanded} bytes from {size}: refused as a "
                                   "zip bomb.")
    if any(member.filename.endswith(".zip") and member.file_size > MAX_RATIO * max(member.compress_size, 1)
           and member.file_size > RATIO_FLOOR for member in members):
        raise UnsupportedMediaType("The ZIP archive nests a highly compressed archive: refused as a zip bomb.")
