"""Reading a spec file: the raw mapping of a ``.toml`` or ``.json`` file, with errors that
name the file.  Apart from the spec models (pydantic, the scenario) so that a missing or
malformed file is refused before they load."""
from __future__ import annotations

import json
import tomllib
from pathlib import Path


def read_spec_file(path: str | Path) -> dict:
    """The raw mapping of a ``.toml`` or ``.json`` spec file (errors name the file)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read spec {p}: {exc.strerror}") from None
    if raw.startswith(b"\xef\xbb\xbf"):  # tomllib said "Invalid statement (at line 1, column 1)"; json took it silently
        raise ValueError(f"spec {p}: the file starts with a UTF-8 byte-order mark (BOM), which a spec file may "
                         "not hold; save it as UTF-8 without a BOM")
    try:
        if p.suffix.lower() == ".toml":
            return tomllib.loads(raw.decode())
        if p.suffix.lower() == ".json":
            return json.loads(raw)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"spec {p}: {exc}") from None
    except RecursionError:  # thousands of nested arrays or tables: no spec looks like that
        raise ValueError(f"spec {p}: nested too deeply to read") from None
    raise ValueError(f"spec {p}: use a .toml or .json file")
