"""The sql env's databases: the two domains' schemas filled with seeded rows, built once per key into
``<data dir>/sql-env`` (mode 0444), and the read-only connection and query runner that model SQL goes through
(the limits are described in :mod:`reference_impls.envs.sql`'s Safety section). Nothing here knows about
questions or episodes."""
from __future__ import annotations

import hashlib
import os
import random
import re
import sqlite3
import threading
import time
from collections import Counter
from functools import lru_cache
from pathlib import Path

FIRST = ("Ada", "Ben", "Cleo", "Dan", "Eva", "Finn", "Gus", "Hana", "Ivo", "Jana", "Kai", "Lena", "Milo", "Nora",
         "Otto", "Pia", "Quinn", "Rosa", "Sami", "Tara", "Ugo", "Vera", "Wim", "Xena", "Yan", "Zoe")
LAST = ("Berg", "Costa", "Dietz", "Evans", "Fox", "Grant", "Hale", "Ito", "Jones", "Klein", "Lund", "Moss",
        "Novak", "Ortiz", "Park", "Reyes", "Stone", "Tan", "Varga", "Wolf")
CITIES = ("Aarhus", "Bilbao", "Cork", "Dresden", "Essen", "Faro", "Graz", "Hamar")
CATEGORIES = ("books", "games", "garden", "kitchen", "music", "sports", "toys")
PRODUCT_WORDS = ("Alpha", "Bright", "Classic", "Deluxe", "Eco", "Flex", "Grand", "Handy", "Icon", "Joy", "Kite",
                 "Lumen", "Micro", "Nova", "Orbit", "Prime")
DEPTS = ("art", "biology", "chemistry", "history", "math", "physics")
MAJORS = ("art", "biology", "chemistry", "economics", "history", "math", "physics")
TOPICS = ("Foundations", "Methods", "Seminar", "Lab", "Theory", "Workshop", "Survey", "Project")

SCHEMAS = {
    "shop": ("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT NOT NULL, age INTEGER)",
             "CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL, price REAL)",
             "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), "
             "product_id INTEGER REFERENCES products(id), quantity INTEGER, day INTEGER)"),
    "school": ("CREATE TABLE students (id INTEGER PRIMARY KEY, name TEXT NOT NULL, year INTEGER, major TEXT)",
               "CREATE TABLE courses (id INTEGER PRIMARY KEY, title TEXT NOT NULL, dept TEXT NOT NULL, credits INTEGER)",
               "CREATE TABLE enrollments (student_id INTEGER REFERENCES students(id), "
               "course_id INTEGER REFERENCES courses(id), grade INTEGER)"),
}
DOMAINS = tuple(SCHEMAS)


def _names(rng: random.Random, n: int) -> list[str]:
    pool = [f"{a} {b}" for a in FIRST for b in LAST]
    return rng.sample(pool, n)


def _rows(domain: str, rng: random.Random) -> dict[str, list[tuple]]:
    if domain == "shop":
        nc, np_, no = rng.randint(12, 20), rng.randint(10, 16), rng.randint(25, 40)
        customers = [(i + 1, name, rng.choice(CITIES[:5]), rng.randint(18, 70)) for i, name in enumerate(_names(rng, nc))]
        pnames = rng.sample([f"{a} {c.rstrip('s')}" for a in PRODUCT_WORDS for c in CATEGORIES], np_)
        products = [(i + 1, n, n.split()[1] + "s" if n.split()[1] + "s" in CATEGORIES else n.split()[1],
                     round(rng.randint(200, 9999) / 100, 2)) for i, n in enumerate(pnames)]
        orders = [(i + 1, rng.randint(1, nc), rng.randint(1, np_), rng.randint(1, 5), rng.randint(1, 7))
                  for i in range(no)]
        return {"customers": customers, "products": products, "orders": orders}
    ns, nc, ne = rng.randint(12, 20), rng.randint(8, 12), rng.randint(25, 40)
    students = [(i + 1, name, rng.randint(1, 4), rng.choice(MAJORS)) for i, name in enumerate(_names(rng, ns))]
    titles = rng.sample([f"{d.title()} {t}" for d in DEPTS for t in TOPICS], nc)
    courses = [(i + 1, t, t.split()[0].lower(), rng.choice((3, 4, 5, 6))) for i, t in enumerate(titles)]
    pairs = rng.sample([(s, c) for s in range(1, ns + 1) for c in range(1, nc + 1)], ne)
    enrollments = [(s, c, rng.randint(40, 100)) for s, c in pairs]
    return {"students": students, "courses": courses, "enrollments": enrollments}


def _db_dir() -> Path:
    """``<data dir>/sql-env`` (``$ATLAS_DATA_DIR`` or ~/.cache/agentic-rl-atlas): the generated databases."""
    from atlas_data import data_dir

    d = data_dir() / "sql-env"
    d.mkdir(mode=0o700, exist_ok=True)
    return d


_build_lock = threading.Lock()  # one builder per process: threads (the app's page and its warm-up) share a temp name


def _complete(path: Path, domain: str) -> bool:
    """Whether the database file holds every table of ``domain``'s schema with rows (a file left by an interrupted
    or raced build, before the lock, may not)."""
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            wanted = {ddl.split()[2] for ddl in SCHEMAS[domain]}
            return wanted <= tables and all(con.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone() for t in wanted)
        finally:
            con.close()
    except sqlite3.Error:
        return False


@lru_cache(maxsize=256)
def database(domain: str, key: str) -> str:
    """Path of the database ``key`` of ``domain`` (built once, deterministically, then read-only). Built under a
    lock into a temporary file of this process, then renamed, so concurrent builders (threads or processes) never
    leave a partial file; a file that is not complete is built again."""
    name = hashlib.sha256(f"v1/{domain}/{key}".encode()).hexdigest()[:20]
    path = _db_dir() / f"{domain}-{name}.sqlite"
    if path.exists() and _complete(path, domain):
        return str(path)
    with _build_lock:
        if path.exists() and _complete(path, domain):  # another thread built it meanwhile
            return str(path)
        tmp = path.with_suffix(f".tmp{os.getpid()}")  # other processes: their own pid
        tmp.unlink(missing_ok=True)
        con = sqlite3.connect(tmp)
        for ddl in SCHEMAS[domain]:
            con.execute(ddl)
        for table, rows in _rows(domain, random.Random(f"sql-db/{domain}/{key}")).items():
            con.executemany(f"INSERT INTO {table} VALUES ({','.join('?' * len(rows[0]))})", rows)
        con.commit()
        con.close()
        os.chmod(tmp, 0o444)
        os.replace(tmp, path)
    return str(path)


# ----------------------------------------------------------------------------------------------------
# read-only query execution

_ALLOWED_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION,
                    getattr(sqlite3, "SQLITE_RECURSIVE", 33)}
_DENIED_FUNCTIONS = {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "randomblob", "zeroblob"}


def _authorizer(action, arg1, arg2, db_name, trigger):
    if action not in _ALLOWED_ACTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_READ and db_name not in (None, "main", "temp"):
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


_READ_START = re.compile(r"\s*(?:(?:--[^\n]*(?:\n|$)|/\*.*?\*/)\s*)*(?:select|with|values)\b", re.I | re.S)


class QueryError(Exception):
    pass


#: the longest string or blob a query may build (SQLITE_LIMIT_LENGTH). The time limit is checked between
#: VM instructions, never inside one function call, so this bounds what one call costs: without it one
#: ``replace(printf(...), 'x', printf(...))`` built hundreds of MB and ran for seconds past the limit.
MAX_VALUE_BYTES = 10_000
#: the bytes of result rows (strings and blobs counted by length, other values as 8) one query may return
MAX_RESULT_BYTES = 2_000_000
_LIMITS = {sqlite3.SQLITE_LIMIT_LENGTH: MAX_VALUE_BYTES, sqlite3.SQLITE_LIMIT_SQL_LENGTH: 100_000,
           sqlite3.SQLITE_LIMIT_COLUMN: 100, sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH: 1000,
           sqlite3.SQLITE_LIMIT_EXPR_DEPTH: 200, sqlite3.SQLITE_LIMIT_COMPOUND_SELECT: 50,
           sqlite3.SQLITE_LIMIT_FUNCTION_ARG: 32, sqlite3.SQLITE_LIMIT_ATTACHED: 0}


def connect_readonly(path: str) -> sqlite3.Connection:
    """A connection that cannot write: read-only URI, query_only, the authorizer (installed last); with
    bounded values (``_LIMITS``) and page cache (8 MB; sorts and temporary tables spill to files)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    for limit, value in _LIMITS.items():
        con.setlimit(limit, value)
    con.execute("PRAGMA query_only=ON")
    con.execute("PRAGMA cache_size=-8000")
    con.execute("PRAGMA temp_store=FILE")
    con.set_authorizer(_authorizer)
    return con


def _row_bytes(row: tuple) -> int:
    return sum(len(v) if isinstance(v, (str, bytes)) else 8 for v in row)


def run_query(con: sqlite3.Connection, sql: str, max_rows: int = 50, time_limit_s: float = 1.0,
              max_chars: int = 20000) -> tuple[list[str], list[tuple], bool]:
    """(column names, rows, truncated). Raises QueryError for anything refused or broken."""
    sql = sql.strip().rstrip(";").strip()
    if not sql:
        raise QueryError("empty query")
    if len(sql) > max_chars:
        raise QueryError("query too long")
    if not _READ_START.match(sql):  # a first gate; the read-only open, query_only and the authorizer are the wall
        raise QueryError("only SELECT, WITH or VALUES queries")
    deadline = time.monotonic() + time_limit_s
    # both stop the query at its next VM jump after the deadline: the handler every 1000 instructions, the
    # timer's interrupt at once (_LIMITS bounds what the instructions in between can cost)
    con.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)
    timer = threading.Timer(time_limit_s, con.interrupt)
    timer.daemon = True
    timer.start()
    rows: list[tuple] = []
    cur = None
    try:
        cur = con.execute(sql)
        size = 0
        for row in cur:
            rows.append(row)
            size += _row_bytes(row)
            if size > MAX_RESULT_BYTES:
                raise QueryError(f"result too large (over {MAX_RESULT_BYTES} bytes)")
            if len(rows) > max_rows:
                break
        cols = [d[0] for d in (cur.description or ())]
    except sqlite3.Warning as e:  # e.g. more than one statement
        raise QueryError(str(e)) from None
    except sqlite3.DatabaseError as e:
        msg = str(e)
        if "interrupted" in msg:
            msg = f"time limit ({time_limit_s:g} s) exceeded"
        elif "too big" in msg:
            msg = f"{msg} (a string or blob may hold at most {MAX_VALUE_BYTES} bytes)"
        raise QueryError(msg) from None
    except (ValueError, OverflowError, MemoryError) as e:
        raise QueryError(f"{type(e).__name__}: {e}") from None
    finally:
        timer.cancel()
        if cur is not None:
            cur.close()  # no statement stays active, so a late interrupt cannot reach the next query
        con.set_progress_handler(None, 0)
    return cols, rows[:max_rows], len(rows) > max_rows


def norm_value(v):
    if isinstance(v, float):
        return round(v, 4) + 0.0
    if isinstance(v, bytes):
        return v.hex()
    return v


def results_match(rows: list[tuple], gold: list[tuple], ordered: bool) -> bool:
    a = [tuple(norm_value(v) for v in r) for r in rows]
    b = [tuple(norm_value(v) for v in r) for r in gold]
    return a == b if ordered else Counter(a) == Counter(b)


def has_order_by(sql: str) -> bool:
    return "order by" in " ".join(sql.lower().split())
