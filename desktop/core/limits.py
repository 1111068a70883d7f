"""Size limits the client and the embedded gateway share: the app accepts what the gateway does."""

from __future__ import annotations

MIB = 1024 * 1024
# Largest image staged with image.attach_bytes (sent to vision models as a data URL).
MAX_IMAGE_BYTES = 10 * MIB
# Largest other file staged with file.attach_bytes (inlined into the prompt when text).
MAX_FILE_BYTES = 5 * MIB
