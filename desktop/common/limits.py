"""Size limits the client and the embedded gateway share: the app accepts what the gateway does."""

from __future__ import annotations

import codecs

MIB = 1024 * 1024
# The largest frame either side accepts (UTF-8 bytes). One constant so the embedded gateway
# never sends what the client would refuse: a refused frame closes the socket (1009).
MAX_FRAME_BYTES = 8 * MIB
# The largest prompt text (UTF-8 bytes): its prompt.submit frame must stay under the frame
# limit, or the gateway closes the socket (1009) and the prompt would be sent again at every
# start. The rest of the frame (ids, keys, escaping headroom) fits in what is left.
MAX_PROMPT_BYTES = MAX_FRAME_BYTES - 256 * 1024
# The deepest JSON nesting a frame the client repairs may have (no real frame comes near it):
# an explicit limit, so a frame's verdict never depends on Python's recursion limit.
MAX_JSON_DEPTH = 128


def prompt_too_large(text: str) -> str:
    """Why `text` cannot be sent as one prompt, in words; "" when it can."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size <= MAX_PROMPT_BYTES:
        return ""
    return (
        f"this message is {size / MIB:.1f} MB and a message can be at most "
        f"{MAX_PROMPT_BYTES / MIB:.1f} MB: shorten it, or send it in parts"
    )


# Largest image staged with image.attach_bytes (sent to vision models as a data URL).
MAX_IMAGE_BYTES = 10 * MIB
# Largest other file staged with file.attach_bytes (inlined into the prompt when text).
MAX_FILE_BYTES = 5 * MIB
# A file the gateway reads as text (UTF-8, no NUL byte) is inlined into the prompt: at most this
# many bytes. The composer refuses a larger one with this reason, before anything is staged.
MAX_INLINE_TEXT_BYTES = 256 * 1024
# Attachments one prompt (one turn) may carry; the gateway refuses the next one it is given.
MAX_ATTACHMENTS = 10


def is_inline_text(data: bytes) -> bool:
    """Whether the gateway takes these file bytes for text (inlined, so MAX_INLINE_TEXT_BYTES)."""
    sniffer = TextSniffer()
    sniffer.feed(data)
    return sniffer.done()


class TextSniffer:
    """Follows a file's bytes: is it all UTF-8 without a NUL byte (what the gateway inlines)?"""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._text = True

    def feed(self, chunk: bytes) -> None:
        if not self._text:
            return
        if b"\x00" in chunk:
            self._text = False
            return
        try:
            self._decoder.decode(chunk)
        except UnicodeDecodeError:
            self._text = False

    def done(self) -> bool:
        """True when every byte fed was text."""
        if self._text:
            try:
                self._decoder.decode(b"", final=True)
            except UnicodeDecodeError:
                self._text = False
        return self._text
