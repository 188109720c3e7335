"""An append-only SQLite ledger of receipts, each entry hash-chained to the previous one.

Entry ``seq`` (1, 2, ...) stores the receipt's canonical JSON, its hash, the previous
entry's hash and ``entry_sha256 = sha256(canonical {seq, prev_sha256, payload_sha256,
appended_at})``.  ``verify`` walks the chain and reports the first break: an edited
payload (hash mismatch), a deleted entry (gap in seq or broken link) or a reordered one
(broken link).  Triggers refuse UPDATE and DELETE through SQLite; the chain is what
detects edits made around them (e.g. by rewriting the file).  A dropped or replaced trigger
is itself reported by ``verify``, and ``append`` refuses such a file rather than re-create
the trigger and hide that it was changed outside simlab.

A chain that verifies is only self-consistent: deleting the last entries, or rebuilding the
whole chain without an entry, gives another self-consistent chain.  So ``verify`` also
checks a **retained head** -- the hash of the last entry, kept outside the writer's reach
(as ``replay --anchor`` keeps a receipt hash): that entry must still be in the chain, at its
sequence number.  ``sign_head`` signs a head statement ``{seq, entry_sha256, signed_at}``
with an Ed25519 key; ``verify_signed_head`` accepts it only from a trusted key, so a head
cannot be forged for a rebuilt chain.  What a retained head cannot show: entries appended
after it, or a rollback to exactly that head -- keep the newest one.

Concurrency: an append is one ``BEGIN IMMEDIATE`` transaction (read the head, insert the
next entry), so concurrent writers -- threads or processes -- serialise on SQLite's write
lock and none is lost; WAL mode and a busy timeout let them wait instead of failing.

Holdout accounting (issue 30, item 5): ``record_use`` appends a ``holdout_use`` entry for
each evidence run against a sealed holdout -- every access, confirmatory or exploratory, with
its kind -- counting and appending in one transaction.  The manifest registers a maximum
number of *confirmatory* accesses (``holdout.max_uses``): only confirmatory accesses count
towards it, and a confirmatory access beyond it is recorded too, numbered past the maximum
(the run's receipt then holds with that reason, ``evidence.receipt``).  Exploratory accesses
are counted and stated beside them (they expose the sealed outcomes too -- evidence spine,
"Repeated holdout use": count accesses, distinguish confirmatory analyses from exploratory
discovery) and authorise lab work at most.  ``check_use`` lets replay confirm that a
packet's stated access is in the chain, with the same counts, without taking another."""
from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from simlab.hashing import canonical_bytes, content_hash

GENESIS = "sha256:" + "0" * 64
_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    seq INTEGER PRIMARY KEY,
    appended_at TEXT NOT NULL,
    payload TEXT NOT NULL,
    payload_sha256 TEXT NOT NULL,
    prev_sha256 TEXT NOT NULL,
    entry_sha256 TEXT NOT NULL UNIQUE
);
CREATE TRIGGER IF NOT EXISTS entries_no_update BEFORE UPDATE ON entries
BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
CREATE TRIGGER IF NOT EXISTS entries_no_delete BEFORE DELETE ON entries
BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
"""


_COLUMNS = ("seq", "appended_at", "payload", "payload_sha256", "prev_sha256", "entry_sha256")
_SQLITE_MAGIC = b"SQLite format 3\x00"


def _open_existing(path: str | Path) -> sqlite3.Connection:
    """A connection to an existing file, never creating one.  Read-write where the file allows
    it (SQLite falls back to read-only where it does not): a reader of a WAL-mode file needs
    its -wal and -shm files, and only a read-write connection removes them when it closes, so
    a check leaves nothing behind.  The callers here only read through it."""
    return sqlite3.connect(f"file:{quote(str(path))}?mode=rw", uri=True, timeout=60.0)


def problem(path: str | Path) -> str | None:
    """Why ``path`` cannot take ledger entries, or None: a ledger, an empty file, an SQLite
    database holding nothing, or no file yet (its nearest existing folder must be a folder).
    Another program's database -- an SQLite file without the ledger's table -- is never
    altered: appending would add a table and switch its journal mode."""
    p = Path(path)
    if not os.path.lexists(p):
        folder = p.parent
        while not os.path.lexists(folder):
            folder = folder.parent
        return None if folder.is_dir() else f"{folder} is not a folder"
    if not p.is_file():
        return "not a ledger (a directory, not a file)" if p.is_dir() else "not a ledger (not a regular file)"
    try:
        with open(p, "rb") as f:
            magic = f.read(len(_SQLITE_MAGIC))
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if not magic:
        return None  # an empty file: a new ledger
    if magic != _SQLITE_MAGIC:
        return "not a ledger (file is not a database)"
    try:
        con = _open_existing(p)
        try:
            objects = con.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            columns = tuple(row[1] for row in con.execute("PRAGMA table_info(entries)"))
        finally:
            con.close()
    except sqlite3.Error as exc:
        return f"not a ledger ({exc})"
    if objects and columns != _COLUMNS:
        return ("not a ledger (an SQLite database without the ledger's entries table: another program's file is "
                "never altered)")
    return None


def _expected_triggers() -> dict[str, str]:
    """The append-only triggers as SQLite stores them (its own spelling of ``_SCHEMA``)."""
    con = sqlite3.connect(":memory:")
    try:
        con.executescript(_SCHEMA)
        return dict(con.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"))
    finally:
        con.close()


def _trigger_problems(con: sqlite3.Connection) -> list[str]:
    """Why the file's triggers are not the append-only ones simlab creates: dropped or replaced
    triggers mean the file was changed outside simlab, so that UPDATE and DELETE went through
    (an edit made that way that keeps the chain consistent is caught only by a retained head)."""
    def spelled(rows) -> dict[str, str]:   # the same statement laid out otherwise is the same trigger
        return {name: " ".join(str(sql).split()) for name, sql in rows}

    found = spelled(con.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"))
    expected = spelled(_expected_triggers().items())
    problems = [f"append-only trigger {name} was dropped (the file was changed outside simlab, and SQLite no "
                "longer refused edits to its entries)" for name in expected if name not in found]
    problems += [f"append-only trigger {name} was replaced (the file was changed outside simlab)"
                 for name in expected if name in found and found[name] != expected[name]]
    problems += [f"trigger {name} is not one simlab creates (the file was changed outside simlab)"
                 for name in found if name not in expected]
    return problems


def _connect(path: str | Path) -> sqlite3.Connection:
    why = problem(path)
    if why is not None:
        raise ValueError(f"{path}: {why}")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(str(path), timeout=60.0, isolation_level=None)
    try:
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA busy_timeout=60000")
        has_entries = con.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'entries'"
                                  ).fetchone()[0] and con.execute("SELECT count(*) FROM entries").fetchone()[0]
        tampered = _trigger_problems(con) if has_entries else []
        if tampered:  # re-creating them would hide the evidence: refuse, and let verify-ledger say it
            raise ValueError(f"{path}: {tampered[0]}; refusing to append (check it with simlab evidence "
                             "verify-ledger)")
        con.executescript(_SCHEMA)
    except BaseException:
        con.close()
        raise
    return con


def _entry_hash(seq: int, prev: str, payload_hash: str, appended_at: str) -> str:
    return content_hash({"seq": seq, "prev_sha256": prev, "payload_sha256": payload_hash, "appended_at": appended_at})


def append(path: str | Path, receipt: dict, now: dt.datetime | None = None, admit=None) -> dict:
    """Append one receipt; returns ``{seq, entry_sha256, payload_sha256}``.  ``admit(con)``,
    run inside the write transaction, may refuse the append by raising (nothing is written)."""
    payload = canonical_bytes(receipt).decode("utf-8")
    payload_hash = content_hash(receipt)
    appended_at = (now or dt.datetime.now(dt.timezone.utc)).isoformat().replace("+00:00", "Z")
    try:
        con = _connect(path)
    except sqlite3.Error as exc:  # damaged past the header: refused before anything is written
        raise ValueError(f"{path}: not a ledger ({exc})") from None
    try:
        con.execute("BEGIN IMMEDIATE")
        if admit is not None:
            admit(con)
        row = con.execute("SELECT seq, entry_sha256 FROM entries ORDER BY seq DESC LIMIT 1").fetchone()
        seq, prev = (row[0] + 1, row[1]) if row else (1, GENESIS)
        entry = _entry_hash(seq, prev, payload_hash, appended_at)
        con.execute("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?)",
                    (seq, appended_at, payload, payload_hash, prev, entry))
        con.execute("COMMIT")
    except BaseException as exc:
        if con.in_transaction:
            con.execute("ROLLBACK")
        if isinstance(exc, sqlite3.Error):  # a malformed page, a lock held past the timeout, a full disk
            raise ValueError(f"{path}: cannot append to the ledger ({exc})") from None
        raise
    finally:
        con.close()
    return {"seq": seq, "entry_sha256": entry, "payload_sha256": payload_hash}


USE_KIND = "simlab.evidence.holdout_use"


PURPOSES = ("confirmatory", "exploratory")


def _uses(rows, holdout_id: str) -> list[dict]:
    out = []
    for (payload,) in rows:
        entry = json.loads(payload)
        if isinstance(entry, dict) and entry.get("kind") == USE_KIND and entry.get("holdout_id") == holdout_id:
            out.append(entry)
    return out


def _counts(uses: list[dict]) -> dict[str, int]:
    """``{access, confirmatory, exploratory}`` of these accesses (the last one's numbers)."""
    kinds = [u.get("purpose", "confirmatory") for u in uses]
    return {"access": len(kinds), **{p: kinds.count(p) for p in PURPOSES}}


def holdout_uses(path: str | Path, holdout_id: str) -> list[dict]:
    """The recorded accesses of sealed holdout ``holdout_id``, oldest first (each with its
    ``purpose``)."""
    return _uses(_read_payloads(path), holdout_id)


def _read_payloads(path):
    con = _open_existing(path)
    try:
        return con.execute("SELECT payload FROM entries ORDER BY seq").fetchall()
    finally:
        con.close()


def record_use(path: str | Path, *, holdout_id: str, holdout_sha256: str, max_uses: int, experiment_id: str,
               manifest_sha256: str, now: dt.datetime | None = None, purpose: str = "confirmatory") -> dict:
    """Record one access of a sealed holdout: ``{access, confirmatory, exploratory, max_uses,
    purpose, seq, entry_sha256}`` -- ``access`` this run's number among all accesses,
    ``confirmatory`` / ``exploratory`` the accesses of each kind so far, this one included.
    The chain must verify (a broken chain could hide accesses), and the count and the append
    are one write transaction, so two concurrent runs never get the same numbers; a
    confirmatory access beyond ``max_uses`` is recorded like any other (``confirmatory >
    max_uses``: the caller holds)."""
    if purpose not in PURPOSES:
        raise ValueError(f"purpose must be confirmatory or exploratory, got {purpose!r}")
    if Path(path).is_file():
        state = verify(path)
        if not state["ok"]:
            raise ValueError(f"{path}: the ledger's chain does not verify, so holdout uses cannot be counted: "
                             + "; ".join(state["problems"][:3]))
    taken: dict[str, int] = {}

    def admit(con):
        before = _uses(con.execute("SELECT payload FROM entries ORDER BY seq").fetchall(), holdout_id)
        taken.update(_counts(before + [{"purpose": purpose}]))

    issued = (now or dt.datetime.now(dt.timezone.utc)).replace(microsecond=0)
    # the numbers are decided inside the transaction; the payload names the run and its kind
    payload = {"kind": USE_KIND, "holdout_id": holdout_id, "holdout_sha256": holdout_sha256, "max_uses": max_uses,
               "experiment_id": experiment_id, "manifest_sha256": manifest_sha256, "purpose": purpose,
               "at": issued.isoformat().replace("+00:00", "Z")}
    entry = append(path, payload, now=now, admit=admit)
    return {**taken, "max_uses": max_uses, "purpose": purpose, "seq": entry["seq"], "entry_sha256": entry["entry_sha256"]}


def check_use(path: str | Path, use: dict, holdout_id: str) -> str | None:
    """Why the recorded access ``use`` (from a packet) is not in the ledger as stated, or None."""
    if not Path(path).is_file():
        return f"no ledger at {path}"
    state = verify(path)
    if not state["ok"]:
        return "the ledger's chain does not verify: " + "; ".join(state["problems"][:3])
    con = _open_existing(path)
    try:
        rows = con.execute("SELECT seq, entry_sha256, payload FROM entries ORDER BY seq").fetchall()
    finally:
        con.close()
    seen: list[dict] = []
    for seq, entry, payload in rows:
        recorded = _uses([(payload,)], holdout_id)
        if not recorded:
            continue
        seen += recorded
        if entry != use.get("entry_sha256"):
            continue
        purpose = recorded[0].get("purpose", "confirmatory")
        if purpose != use.get("purpose", "confirmatory"):
            return f"ledger entry {entry} records the use as {purpose}, the packet states {use.get('purpose')}"
        counts = {"seq": seq, **_counts(seen)}
        stated = {k: use.get(k) for k in counts}
        return None if stated == counts else (
            f"ledger entry {entry} is {_numbers(counts)}, the packet states {_numbers(stated)}")
    return f"the packet's holdout use (entry {use.get('entry_sha256')}) is not in the ledger {path}"


def _numbers(c: dict) -> str:
    return (f"access {c['access']} (confirmatory {c['confirmatory']}, exploratory {c['exploratory']}) at entry "
            f"{c['seq']}")


def verify(path: str | Path, head: str | None = None, head_seq: int | None = None) -> dict:
    """Walk the chain: ``{"ok", "entries", "head", "problems"}`` (every break is listed);
    with a retained ``head`` (and its ``head_seq``), that entry must be in the chain."""
    if not Path(path).is_file():
        raise ValueError(f"no ledger at {path}")
    try:
        con = _open_existing(path)
    except sqlite3.Error as exc:
        raise ValueError(f"{path}: not a ledger ({exc})") from None
    try:
        rows = con.execute("SELECT seq, appended_at, payload, payload_sha256, prev_sha256, entry_sha256 "
                           "FROM entries ORDER BY rowid").fetchall()
        triggers = _trigger_problems(con)
    except sqlite3.DatabaseError as exc:
        raise ValueError(f"{path}: not a ledger ({exc})") from None
    finally:
        con.close()
    problems = []
    prev, expected_seq = GENESIS, 1
    for seq, appended_at, payload, payload_hash, stated_prev, entry in rows:
        if seq != expected_seq:
            problems.append(f"entry {seq}: expected entry {expected_seq} here (entry deleted or reordered)")
        try:
            actual = content_hash(json.loads(payload))
        except (ValueError, TypeError, RecursionError):  # not JSON, or nested past the parser's depth
            actual = "unreadable"
        if actual != payload_hash:
            problems.append(f"entry {seq}: receipt edited (payload hashes to {actual}, recorded {payload_hash})")
        if stated_prev != prev:
            problems.append(f"entry {seq}: chain broken (links to {stated_prev[:19]}..., previous entry is "
                            f"{prev[:19]}...): an entry was deleted, inserted or reordered")
        if _entry_hash(seq, stated_prev, payload_hash, appended_at) != entry:
            problems.append(f"entry {seq}: entry hash does not match its fields (edited)")
        prev, expected_seq = entry, seq + 1
    problems += triggers  # after the chain's own breaks, which say what was changed
    out = {"ok": not problems, "entries": len(rows), "head": prev if rows else None, "problems": problems}
    if head is not None:
        at = next((seq for seq, *_, entry in rows if entry == head), None)
        if at is None:
            problems.append(f"retained head {head} is not in the chain: entries were deleted (truncated) or the chain "
                            "was rebuilt since that head was kept")
        elif head_seq is not None and at != head_seq:
            problems.append(f"retained head {head} is entry {at}, not entry {head_seq} as retained (rebuilt chain)")
        out["retained_head"] = {"entry_sha256": head, "seq": at, "entries_after": None if at is None else
                                sum(1 for r in rows if r[0] > at)}
        out["ok"] = not problems
    return out


HEAD_KIND = "simlab.ledger.head"


def head_statement(path: str | Path, now: dt.datetime | None = None) -> dict:
    """The ledger's current head as a statement to sign (the chain must verify)."""
    state = verify(path)
    if not state["ok"]:
        raise ValueError(f"{path}: the chain does not verify; a broken chain's head is not signed: "
                         + "; ".join(state["problems"][:3]))
    if not state["entries"]:
        raise ValueError(f"{path}: the ledger is empty")
    signed_at = (now or dt.datetime.now(dt.timezone.utc)).replace(microsecond=0)
    return {"kind": HEAD_KIND, "seq": state["entries"], "entry_sha256": state["head"],
            "signed_at": signed_at.isoformat().replace("+00:00", "Z")}


def sign_head(path: str | Path, key, now: dt.datetime | None = None) -> dict:
    """``{"statement", "signature"}``: the head statement signed with an Ed25519 private key."""
    from simlab import signing

    statement = head_statement(path, now)
    return {"statement": statement, "signature": signing.sign(statement, key).model_dump()}


def verify_signed_head(envelope: dict, trusted: dict) -> dict:
    """The head statement of a signed head plus ``signed_by``, when a trusted key signed it
    (SignatureError otherwise)."""
    from simlab import signing

    statement = envelope.get("statement") if isinstance(envelope, dict) else None
    if not isinstance(statement, dict) or statement.get("kind") != HEAD_KIND:
        raise signing.SignatureError("not a signed ledger head")
    try:
        key = signing.verify(statement, envelope.get("signature"), trusted)
    except ValueError as exc:  # a malformed signature object
        raise signing.SignatureError(str(exc).splitlines()[0]) from None
    return {**statement, "signed_by": key}


def entries(path: str | Path) -> list[dict]:
    return [json.loads(p) for (p,) in _read_payloads(path)]
