"""cloud-init user-data as a cloud accepts it: gzip-compressed, and its size against the limits.

The #cloud-config that carries deploy.sh is 30-57 KB as text; EC2 refuses user-data over 16 KiB
(OpenStack's 65535 bytes of base64 allow about 48 KiB). cloud-init unpacks gzip-compressed
user-data by itself (it checks the gzip magic first), so the export is the text gzip-compressed:
the same bytes for the same text (no name, no time stamp), and ``zcat`` shows what a person
reviews. ``size_note`` says the size and how it compares with each cloud's documented limit.
Pure: no I/O.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from typing import Literal

SUFFIX = ".gz"


@dataclass(frozen=True)
class UserDataLimit:
    cloud: str
    max_bytes: int
    """The most user-data bytes the cloud takes, as gzip-compressed bytes (before any base64
    encoding the API asks for): the documented limit converted where it counts base64."""
    takes: Literal["bytes", "text"]
    """"text": the value must be a string, so it gets the uncompressed text (``zcat``)."""
    source: str
    """Where the limit is documented, and when it was read."""


LIMITS = (
    UserDataLimit(  # under 16 KiB: 16384 bytes would not fit
        "EC2", 16 * 1024 - 1, "bytes",
        "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-add-user-data.html "
        "('limited to 16 KB, in raw form, before it is base64-encoded'), read 2026-12-04",
    ),
    UserDataLimit(
        "OpenStack", 65535 // 4 * 3, "bytes",
        "https://docs.openstack.org/nova/stein/user/user-data.html ('must be base64 encoded and "
        "is restricted to 65535 bytes'), read 2026-12-04",
    ),
    UserDataLimit(
        "Azure", 65535, "bytes",
        "https://learn.microsoft.com/en-us/dotnet/api/azure.resourcemanager.computeschedule.models."
        "virtualmachineosprofile.customdata (customData: 'the maximum length of the binary array "
        "is 65535 bytes'), read 2026-12-04",
    ),
    UserDataLimit(
        "Google Cloud", 256 * 1024, "text",
        "https://cloud.google.com/php/docs/reference/cloud-compute/latest/V1.Items (a metadata "
        "value is a free-form string of at most 262144 bytes), read 2026-12-04",
    ),
)  # fmt: skip
"""The common clouds' user-data limits, from their own documentation."""
STRICTEST = LIMITS[0]


def compress(text: str) -> bytes:
    """``text`` gzip-compressed, the same bytes every time (no file name, time stamp 0)."""
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


def size_note(data: bytes, text_bytes: int) -> str:
    """One line: the compressed size, the text's, and which clouds take it as it is."""
    size = f"{len(data):,} bytes gzip-compressed ({text_bytes:,} as text; zcat shows it)"
    binary = [limit for limit in LIMITS if limit.takes == "bytes"]
    fits = [limit.cloud for limit in binary if len(data) <= limit.max_bytes]
    over = [limit for limit in binary if len(data) > limit.max_bytes]
    told = f"{size}: under the user-data limits of {', '.join(fits)}" if fits else size
    if over:
        told += "; over " + ", ".join(
            f"{limit.cloud}'s {limit.max_bytes:,} by {len(data) - limit.max_bytes:,}"
            for limit in over
        )
    for limit in (limit for limit in LIMITS if limit.takes == "text"):
        verdict = "fits" if text_bytes <= limit.max_bytes else "is over"
        told += (
            f"; {limit.cloud} takes text ({limit.max_bytes // 1024} KiB): give it zcat's output, "
            f"which {verdict}"
        )
    return told
