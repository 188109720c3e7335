"""The evidence path's JSON files: read with an error naming the file, written never over an
existing one (evidence is never replaced).  An object that repeats a key is refused: Python's
``json`` would keep the last value silently, so ``{"passed": true, "passed": false}`` would read
as a failure to the program and as a pass to a person reading the line.  Text must be UTF-8
(an undecodable byte is named by line and column), and arrays or objects nested deeper than
the parser follows are refused (:class:`NestedTooDeeply`), never a RecursionError.

JSONL (one value per line, :func:`json_lines`): a blank or whitespace-only line is an error
naming its line, never skipped; only the empty tail after the final newline is no line."""
from __future__ import annotations

import codecs
import json
from pathlib import Path
from typing import Any, Iterable


class RefusedJSON(ValueError):
    """JSON the evidence path refuses although it may parse (its subclasses say why)."""


class RepeatedKey(RefusedJSON):
    """A JSON object names one key twice."""


class NestedTooDeeply(RefusedJSON):
    """Arrays or objects nested deeper than the parser follows (Python's recursion limit)."""


TOO_DEEP = "nested too deeply to read (arrays or objects inside each other beyond what the JSON parser follows)"


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    obj: dict = {}
    for key, value in pairs:
        if key in obj:
            raise RepeatedKey(f"key {key!r} appears twice in one object (which value counts would be a guess)")
        obj[key] = value
    return obj


def loads(text: str | bytes, **kwargs) -> Any:
    """``json.loads`` that refuses an object repeating a key (:class:`RepeatedKey`) and nesting
    deeper than the parser follows (:class:`NestedTooDeeply`)."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, **kwargs)
    except RecursionError:
        raise NestedTooDeeply(TOO_DEEP) from None


class NotUTF8(RefusedJSON):
    """Text that is not UTF-8: the message names the byte, its line and column; ``cause`` is
    the same without the line (for a reader that names the line itself)."""

    def __init__(self, data: bytes, exc: UnicodeDecodeError):
        start = exc.start
        column = start - (data.rfind(b"\n", 0, start) + 1) + 1
        self.line = data.count(b"\n", 0, start) + 1
        self.cause = f"not UTF-8 text: byte 0x{data[start]:02x} at column {column} (save the file as UTF-8)"
        super().__init__(self.cause.replace(" at column", f" at line {self.line}, column", 1))


def utf8_text(data: bytes, bom: bool = False) -> str:
    """The text of a file's bytes (``bom``: a leading UTF-8 byte-order mark is dropped, as a
    spreadsheet's CSV export writes one); :class:`NotUTF8` where a byte is not UTF-8."""
    body = data[len(codecs.BOM_UTF8):] if bom and data.startswith(codecs.BOM_UTF8) else data
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotUTF8(body, exc) from None


def json_lines(data: bytes, unit: str, **kwargs) -> Iterable[tuple[int, Any]]:
    """``(line number, value or ValueError)`` of each line of JSONL bytes (``kwargs`` go to
    :func:`loads`): a blank or whitespace-only line, text that is not UTF-8, malformed JSON, a
    repeated key or too deep a nesting is a ValueError for its line; nothing is skipped but the
    empty tail after the final newline."""
    lines = data.split(b"\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            if number == len(lines) and not line:  # the final newline's empty tail
                continue
            yield number, ValueError(f"empty line (one {unit} per line; nothing is skipped silently)")
            continue
        try:
            yield number, loads(line, **kwargs)
        except UnicodeDecodeError as exc:
            yield number, ValueError(NotUTF8(line, exc).cause)
        except json.JSONDecodeError as exc:
            yield number, ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})")
        except RefusedJSON as exc:
            yield number, ValueError(str(exc))


def read_json(path: str | Path) -> Any:
    """A JSON file; a missing, malformed or non-UTF-8 file, one repeating a key or nested too
    deeply, is a ValueError naming it."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise ValueError(f"no file at {path}") from None
    try:
        return loads(utf8_text(data))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    except RefusedJSON as exc:
        raise ValueError(f"{path}: {exc}") from None


def write_json(path: str | Path, payload: Any, overwrite: bool = False) -> None:
    """Write JSON (a missing folder is created); an existing file is refused unless ``overwrite``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(payload, indent=1, allow_nan=False) + "\n"
    try:
        with open(path, "w" if overwrite else "x") as f:
            f.write(text)
    except FileExistsError:
        raise ValueError(f"{path} exists; it is never overwritten (choose a new path)") from None
