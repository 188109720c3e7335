"""UTC timestamps in the one text form records, certificates and receipts store
(``YYYY-MM-DDTHH:MM:SSZ``)."""
from __future__ import annotations

import datetime as _dt


def utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


def format_time(t: _dt.datetime) -> str:
    return t.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(s: str) -> _dt.datetime:
    return _dt.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=_dt.timezone.utc)


__all__ = ["format_time", "parse_time", "utcnow"]
