"""Size limits the client and the embedded gateway share: the app accepts what the gateway does."""

from __future__ import annotations

MIB = 1024 * 1024
# The largest frame either side accepts (UTF-8 bytes). One constant so the embedded gateway
# never sends what the client would refuse: a refused frame closes the socket (1009).
MAX_FRAME_BYTES = 8 * MIB
# Largest image staged with image.attach_bytes (sent to vision models as a data URL).
MAX_IMAGE_BYTES = 10 * MIB
# Largest other file staged with file.attach_bytes (inlined into the prompt when text).
MAX_FILE_BYTES = 5 * MIB
