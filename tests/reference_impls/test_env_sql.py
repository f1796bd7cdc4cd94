"""Text-to-SQL env: generator, held-out split, solvability, read-only enforcement, limits, parser fuzzing."""
from __future__ import annotations

import hashlib
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from reference_impls.envs import get_env
from reference_impls.envs import sql

SPEC = get_env("sql")


def test_deterministic_and_levels():
    a = SPEC.problems("train", 30, seed=3)
    b = SPEC.problems("train", 30, seed=3)
    assert a == b and len(a) == 30
    assert {p.level for p in a} == {1, 2, 3}
    assert SPEC.problems("train", 30, seed=4) != a
    assert {p.level for p in SPEC.problems("train", 12, levels=(3,))} == {3}
    assert {p.domain for p in SPEC.problems("train", 12, domains=("school",))} == {"school"}


def test_heldout_is_disjoint():
    train, held = SPEC.problems("train", 120), SPEC.problems("heldout", 120)
    assert not {p.db_key for p in train} & {p.db_key for p in held}  # different databases
    assert not {p.question for p in train} & {p.question for p in held}  # and phrasings
    for t in sql.TEMPLATES:
        assert not set(t.train_phrasings) & set(t.heldout_phrasings)


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_demonstrations_solve_every_problem(split):
    for p in SPEC.problems(split, 36, seed=1):
        env = SPEC.make(p)
        env.reset()
        segs = SPEC.demonstration(p)
        assert segs[-1][0] == "model"
        for role, text in segs[:-1]:
            if role == "model":
                assert not env.step(text).done
        r = env.step(segs[-1][1])
        assert r.done and r.reward == 1.0 and r.info["correct"], (p, r.info)


def test_wrong_queries_score_zero_and_order_rules():
    p = next(p for p in SPEC.problems("train", 12) if p.family == "top3_expensive")
    env = SPEC.make(p)
    rev = "SELECT name FROM (SELECT name, price FROM products ORDER BY price DESC, name LIMIT 3) ORDER BY price"
    assert env.step(f"<answer>{rev}</answer>").reward == 0.0  # gold has ORDER BY: order matters
    q = next(p for p in SPEC.problems("train", 12) if p.family == "products_in_category")
    env = SPEC.make(q)
    shuffled = q.gold_sql + " ORDER BY name DESC"
    assert env.step(f"<answer>{shuffled}</answer>").reward == 1.0  # no ORDER BY in gold: a multiset
    assert SPEC.make(q).step("<answer>SELECT 1</answer>").reward == 0.0
    assert SPEC.make(q).step("<answer>SELEC nonsense</answer>").info["error"]


def _digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


HOSTILE = [
    "INSERT INTO customers VALUES (999, 'x', 'y', 1)",
    "UPDATE customers SET name = 'x'",
    "DELETE FROM orders",
    "DROP TABLE customers",
    "CREATE TABLE t (x)",
    "CREATE TEMP TABLE t (x)",
    "CREATE INDEX i ON customers(name)",
    "ALTER TABLE customers ADD COLUMN z",
    "REPLACE INTO customers VALUES (1, 'x', 'y', 1)",
    "ATTACH DATABASE '/tmp/atlas-sql-attack.db' AS x",
    "ATTACH DATABASE ':memory:' AS x",
    "DETACH DATABASE main",
    "PRAGMA writable_schema = ON",
    "PRAGMA query_only = OFF",
    "PRAGMA journal_mode = WAL",
    "VACUUM",
    "VACUUM INTO '/tmp/atlas-sql-copy.db'",
    "BEGIN IMMEDIATE",
    "SELECT load_extension('/tmp/x.so')",
    "REINDEX",
    "ANALYZE",
    "SELECT 1; DROP TABLE customers",
    "WITH x AS (SELECT 1) DELETE FROM orders",
]


@pytest.mark.parametrize("stmt", HOSTILE)
def test_no_query_changes_the_database(stmt, tmp_path):
    p = next(p for p in SPEC.problems("train", 6) if p.domain == "shop")
    before = _digest(p.db_path)
    env = SPEC.make(p)
    obs = env.step(f"<tool>query {stmt}</tool>").observation
    assert obs.startswith("<result>error:"), (stmt, obs)
    # and straight through the connection too
    with pytest.raises(sql.QueryError):
        sql.run_query(sql.connect_readonly(p.db_path), stmt)
    # and the final answer
    assert SPEC.make(p).step(f"<answer>{stmt}</answer>").reward == 0.0
    assert _digest(p.db_path) == before
    con = sqlite3.connect(f"file:{p.db_path}?mode=ro", uri=True)
    assert con.execute("SELECT count(*) FROM customers").fetchone()[0] > 0
    assert not any(str(f).startswith("/tmp/atlas-sql-attack") for f in tmp_path.iterdir())


def test_time_limit_and_row_limit():
    p = SPEC.problems("train", 1)[0]
    con = sql.connect_readonly(p.db_path)
    with pytest.raises(sql.QueryError, match="time limit"):
        sql.run_query(con, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
                      time_limit_s=0.2)
    cols, rows, trunc = sql.run_query(con, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                                            "SELECT x FROM c", max_rows=7)
    assert len(rows) == 7 and trunc
    env = SPEC.make(p, max_rows=3)
    obs = env.step("<tool>query SELECT * FROM customers</tool>").observation
    assert "only 3 shown" in obs
    # an infinite answer query ends the episode with reward 0, quickly
    r = SPEC.make(p, time_limit_s=0.2).step(
        "<answer>WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c</answer>")
    assert r.done and r.reward == 0.0 and "time limit" in r.info["error"]


def test_tools_and_tool_budget():
    p = SPEC.problems("train", 1)[0]
    env = SPEC.make(p, max_tool_calls=2)
    assert "customers" in env.step("<tool>tables</tool>").observation
    assert "error: no table" in env.step("<tool>describe customers; DROP TABLE x</tool>").observation
    r = env.step("<tool>tables</tool>")
    assert r.done and r.reward == 0.0 and r.info["truncated"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=200), st.sampled_from(["", "<tool>", "<tool>query ", "<tool>describe ", "<answer>"]),
       st.sampled_from(["", "</tool>", "</answer>"]))
def test_fuzz_any_text_gives_an_observation(body, head, tail):
    p = SPEC.problems("train", 1)[0]
    env = SPEC.make(p)
    env.reset()
    r = env.step(head + body + tail)
    assert isinstance(r.reward, float)
    assert r.done or (r.observation.startswith("<result>") and r.observation.endswith("</result>"))


@pytest.mark.parametrize("stmt", [s for s in HOSTILE if s != "REINDEX"])  # REINDEX: a no-op without indexes
def test_each_wall_alone_refuses_writes(stmt):
    """Behind the SELECT gate: the authorizer alone refuses; and a plain read-only open refuses writes."""
    p = next(p for p in SPEC.problems("train", 6) if p.domain == "shop")
    before = _digest(p.db_path)
    with pytest.raises((sqlite3.DatabaseError, sqlite3.Warning, sqlite3.ProgrammingError)):
        sql.connect_readonly(p.db_path).execute(stmt)
    ro = sqlite3.connect(f"file:{p.db_path}?mode=ro", uri=True)
    # (a TEMP table lives in memory: read-only open allows it, the authorizer does not)
    if stmt.split()[0] in ("INSERT", "UPDATE", "DELETE", "DROP", "CREATE", "ALTER", "REPLACE") and "TEMP" not in stmt:
        with pytest.raises(sqlite3.OperationalError):
            ro.execute(stmt)
    assert _digest(p.db_path) == before


def test_databases_built_at_once_by_threads_are_whole(tmp_path, monkeypatch):
    """The app's page and its warm-up may build the same database in two threads of one process: each gets the
    whole database, and none sees an error (they used to share a temporary file: 'disk I/O error', and a file with
    some tables missing that stayed in the cache)."""
    import threading

    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path))
    errors, paths = [], []
    for trial in range(5):
        barrier = threading.Barrier(6)

        def build(key=f"race/{trial}"):
            barrier.wait()
            try:
                paths.append(sql.database.__wrapped__("school", key))  # past the cache: every thread builds
            except Exception as err:  # noqa: BLE001 - any error is the failure
                errors.append(repr(err))

        threads = [threading.Thread(target=build) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == [] and len(paths) == 30
    for path in set(paths):
        con = sqlite3.connect(path)
        assert all(con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] > 0
                   for t in ("students", "courses", "enrollments"))
        con.close()


def test_a_partial_database_in_the_cache_is_built_again(tmp_path, monkeypatch):
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path))
    path = sql.database.__wrapped__("school", "partial/0")
    whole = sqlite3.connect(path).execute("SELECT COUNT(*) FROM courses").fetchone()[0]
    import os
    os.chmod(path, 0o644)
    os.unlink(path)
    con = sqlite3.connect(path)  # what a raced build left: one empty table, the others missing
    con.execute(sql.SCHEMAS["school"][0])
    con.commit()
    con.close()
    assert sql.database.__wrapped__("school", "partial/0") == path
    assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM courses").fetchone()[0] == whole
