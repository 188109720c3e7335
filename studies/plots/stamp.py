"""The mark every PNG simlab draws carries, and its reader.

Every plot is written by :func:`save_png`, which adds two PNG text (tEXt) chunks: a
``Software`` line naming simlab and matplotlib, and the key :data:`PNG_KEY`.  A PNG that
carries the key is a plot simlab drew and may be replaced by a new one; any other PNG
(a user's own matplotlib figure included: matplotlib names itself in ``Software`` too) is
a user's file.  :func:`is_simlab_png` reads the chunks with the standard library only
(no matplotlib, no PIL): the command line asks it before any work.
"""
from __future__ import annotations

import functools
import struct
from pathlib import Path

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_KEY = "simlab-plot"   # its value: the version of this mark
PNG_KEY_VALUE = "1"
MAX_CHUNKS = 100_000      # a PNG of more chunks than this is not one simlab drew


@functools.lru_cache(maxsize=1)
def _versions() -> tuple[str, str]:
    from importlib import metadata

    out = []
    for package in ("simlab", "matplotlib"):
        try:
            out.append(metadata.version(package))
        except metadata.PackageNotFoundError:
            out.append("unknown")
    return out[0], out[1]


def png_metadata() -> dict[str, str]:
    """The PNG text chunks of a plot simlab draws (``savefig(metadata=...)``)."""
    simlab, matplotlib = _versions()
    return {"Software": f"simlab {simlab} (matplotlib {matplotlib})", PNG_KEY: PNG_KEY_VALUE}


def save_png(fig, path, **kwargs) -> Path:
    """``fig.savefig`` to ``path`` with simlab's mark (:func:`png_metadata`) when it is a PNG
    (by ``format``, else by its suffix; no suffix: PNG); the other keyword arguments (``dpi``,
    ``bbox_inches``) are handed on.  Another format (a caller's .svg, .pdf) is written as
    matplotlib writes it: their metadata hold other keys."""
    path = Path(path)
    fmt = kwargs.pop("format", None) or path.suffix[1:].lower() or "png"
    if fmt == "png":
        kwargs["metadata"] = {**png_metadata(), **kwargs.get("metadata", {})}
    fig.savefig(path, format=fmt, **kwargs)
    return path


def png_text(path) -> dict[str, str] | None:
    """The text chunks (tEXt, and uncompressed iTXt) of the PNG file ``path``, keyword ->
    text; ``None`` when the file is not a well-formed PNG (its signature, a chunk's length
    or CRC).  Image data are skipped, not read."""
    import zlib

    text: dict[str, str] = {}
    with open(path, "rb") as f:
        if f.read(8) != PNG_SIGNATURE:
            return None
        for _ in range(MAX_CHUNKS):
            head = f.read(8)
            if len(head) != 8:
                return None   # cut short before IEND
            length, kind = struct.unpack(">I4s", head)
            if length > 0x7FFFFFFF:
                return None
            if kind in (b"tEXt", b"iTXt"):
                data = f.read(length)
                crc = f.read(4)
                if len(data) != length or len(crc) != 4 or struct.unpack(">I", crc)[0] != zlib.crc32(kind + data):
                    return None
                entry = _text_entry(kind, data)
                if entry is not None:
                    text.setdefault(*entry)
            else:
                f.seek(length + 4, 1)   # the data and its CRC: not read
            if kind == b"IEND":
                return text
    return None


def _text_entry(kind: bytes, data: bytes) -> tuple[str, str] | None:
    key, sep, rest = data.partition(b"\0")
    if not sep or not 1 <= len(key) <= 79:
        return None
    if kind == b"tEXt":
        return key.decode("latin-1"), rest.decode("latin-1")
    if len(rest) < 2 or rest[0] != 0:   # iTXt: compressed text is not read
        return None
    _language, sep, rest = rest[2:].partition(b"\0")
    _translated, sep2, value = rest.partition(b"\0")
    if not (sep and sep2):
        return None
    try:
        return key.decode("latin-1"), value.decode("utf-8")
    except UnicodeDecodeError:
        return None


def is_simlab_png(path) -> bool:
    """Whether ``path`` is a PNG simlab drew (it carries :data:`PNG_KEY`): such a file may be
    replaced by a new plot; any other file is a user's."""
    try:
        text = png_text(path)
    except OSError:
        return False
    return text is not None and PNG_KEY in text


__all__ = ["PNG_KEY", "PNG_KEY_VALUE", "PNG_SIGNATURE", "is_simlab_png", "png_metadata", "png_text", "save_png"]
