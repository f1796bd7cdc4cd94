"""Text-to-SQL environment (Spider / BIRD style, with tools): questions over generated SQLite databases.

Tag format (inside the assistant turn; the environment's text is loss-masked)::

    model: <tool>tables</tool>                   list the tables
    env:   <result>customers, orders, products</result>
    model: <tool>describe orders</tool>          columns of one table (name and type) and 3 sample rows
    model: <tool>query SELECT ...</tool>         run a read-only query; rows come back (at most max_rows)
    model: <answer>SELECT ...</answer>           the final query ends the episode

Problems
    A *domain* (``shop``: customers / products / orders; ``school``: students / courses / enrollments) is
    a schema; a database is that schema filled with seeded rows (names, cities, prices ...). A question
    comes from a *template* (its ``family``) with parameters drawn from the database's rows and a gold
    query. Levels: 1 = one table, a filter or a count; 2 = aggregation, GROUP BY or ORDER BY ... LIMIT;
    3 = joins over two or three tables.
Splits
    ``train`` and ``heldout`` use different databases (the split name is part of every database's and
    question's seed) and different phrasings of every template.
Reward
    Execution match: ``1.0`` when the final ``<answer>`` query runs and returns the same result as the gold
    query on the same database; rows are compared as a multiset unless the gold query has ``ORDER BY``,
    then as a list; numbers are compared rounded to 4 decimals. Else ``0.0``.
Safety
    Model SQL never touches a writable database: every connection opens the file read-only
    (``file:...?mode=ro`` URI), sets ``PRAGMA query_only=ON``, installs an authorizer that allows only
    reads, selects, recursive CTEs and a list of functions (no ATTACH, no PRAGMA, no write of any kind, no
    ``load_extension``), a progress handler and a timer (``Connection.interrupt``) that abort a query after
    ``time_limit_s``, and reads at most ``max_rows`` rows and ``MAX_RESULT_BYTES`` bytes. SQLite's own limits
    (``_LIMITS``) cap every string or blob at ``MAX_VALUE_BYTES``, so one function call (which no time limit
    can interrupt) stays cheap; the page cache is 8 MB and sorts spill to temporary files. The database files
    are built by our code (not the model's) and are mode 0444.
"""
from __future__ import annotations

import random
import re
import sqlite3
from dataclasses import dataclass
from functools import lru_cache

from ..options import Options, option
from . import EnvSpec, StepResult, ToolSpec
# the database names that callers (tests, the env's questions) import from the env's module
from .sql_db import (DOMAINS, MAX_VALUE_BYTES, SCHEMAS, QueryError, connect_readonly,  # noqa: F401
                     database, has_order_by, norm_value, results_match, run_query)

TOOL = ToolSpec(
    name="sql",
    description="Database tools: 'tables', 'describe TABLE', 'query SQL' (read-only).",
    call_open="<tool>",
    call_close="</tool>",
    result_open="<result>",
    result_close="</result>",
)

SYSTEM_PROMPT = (
    "Answer the question with one SQLite query. Tools: <tool>tables</tool> lists the tables, "
    "<tool>describe TABLE</tool> shows its columns, <tool>query SQL</tool> runs a read-only query; results "
    "come back in <result>...</result>. End with the final query as <answer>SQL</answer>."
)


# ----------------------------------------------------------------------------------------------------
# questions

@dataclass(frozen=True)
class Problem:
    question: str
    gold_sql: str
    domain: str
    db_key: str
    tables: tuple[str, ...]  # tables the gold query reads (the demonstration describes them)
    family: str
    phrasing: int
    level: int
    split: str
    uid: str

    @property
    def db_path(self) -> str:
        return database(self.domain, self.db_key)


@dataclass(frozen=True)
class Template:
    name: str
    domain: str
    level: int
    tables: tuple[str, ...]
    sql: str
    train_phrasings: tuple[str, ...]
    heldout_phrasings: tuple[str, ...]
    params: tuple[tuple[str, str], ...] = ()  # (placeholder, query over the db whose rows are the choices)


TEMPLATES: tuple[Template, ...] = (
    Template("count_city", "shop", 1, ("customers",), "SELECT COUNT(*) FROM customers WHERE city = '{city}'",
             ("How many customers live in {city}?", "Count the customers from {city}."),
             ("What is the number of customers whose city is {city}?",),
             (("city", "SELECT DISTINCT city FROM customers"),)),
    Template("products_in_category", "shop", 1, ("products",), "SELECT name FROM products WHERE category = '{cat}'",
             ("List the names of the products in the category {cat}.", "Which products belong to {cat}?"),
             ("Give the name of every product of category {cat}.",),
             (("cat", "SELECT DISTINCT category FROM products"),)),
    Template("avg_price_by_category", "shop", 2, ("products",),
             "SELECT category, AVG(price) FROM products GROUP BY category",
             ("What is the average product price in each category?", "For each category, give the mean price."),
             ("Show every category with the average price of its products.",)),
    Template("top3_expensive", "shop", 2, ("products",),
             "SELECT name FROM products ORDER BY price DESC, name LIMIT 3",
             ("Name the three most expensive products, most expensive first.",
              "Which are the 3 priciest products (highest price first)?"),
             ("List the top three products by price, descending.",)),
    Template("quantity_by_city", "shop", 3, ("customers", "orders"),
             "SELECT SUM(orders.quantity) FROM orders JOIN customers ON orders.customer_id = customers.id "
             "WHERE customers.city = '{city}'",
             ("What is the total quantity ordered by customers from {city}?",
              "How many items did customers living in {city} order in total?"),
             ("Sum the quantities of all orders placed by customers in {city}.",),
             (("city", "SELECT DISTINCT city FROM customers"),)),
    Template("customers_of_category", "shop", 3, ("customers", "orders", "products"),
             "SELECT DISTINCT customers.name FROM customers JOIN orders ON orders.customer_id = customers.id "
             "JOIN products ON products.id = orders.product_id WHERE products.category = '{cat}'",
             ("List the names of customers who ordered a product in the category {cat}.",
              "Which customers bought something from the {cat} category?"),
             ("Who placed an order for a {cat} product? Give customer names.",),
             (("cat", "SELECT DISTINCT category FROM products"),)),
    Template("students_in_year", "school", 1, ("students",), "SELECT name FROM students WHERE year = {year}",
             ("List the names of the students in year {year}.", "Which students are in year {year}?"),
             ("Give the names of all year-{year} students.",),
             (("year", "SELECT DISTINCT year FROM students"),)),
    Template("count_major", "school", 1, ("students",), "SELECT COUNT(*) FROM students WHERE major = '{major}'",
             ("How many students major in {major}?", "Count the {major} majors."),
             ("What is the number of students whose major is {major}?",),
             (("major", "SELECT DISTINCT major FROM students"),)),
    Template("credits_by_dept", "school", 2, ("courses",), "SELECT dept, SUM(credits) FROM courses GROUP BY dept",
             ("What is the total number of credits offered by each department?",
              "For each dept, sum the credits of its courses."),
             ("Show every department with the sum of its course credits.",)),
    Template("max_grade", "school", 2, ("enrollments",), "SELECT MAX(grade) FROM enrollments",
             ("What is the highest grade in any enrollment?", "Give the best grade recorded."),
             ("Which is the maximum grade over all enrollments?",)),
    Template("avg_grade_course", "school", 3, ("courses", "enrollments"),
             "SELECT AVG(enrollments.grade) FROM enrollments JOIN courses ON courses.id = enrollments.course_id "
             "WHERE courses.title = '{title}'",
             ("What is the average grade in the course '{title}'?", "Give the mean grade of '{title}'."),
             ("How well do students do in '{title}' on average (mean grade)?",),
             (("title", "SELECT DISTINCT courses.title FROM courses JOIN enrollments ON course_id = courses.id"),)),
    Template("students_in_dept", "school", 3, ("students", "enrollments", "courses"),
             "SELECT DISTINCT students.name FROM students JOIN enrollments ON enrollments.student_id = students.id "
             "JOIN courses ON courses.id = enrollments.course_id WHERE courses.dept = '{dept}'",
             ("List the names of students enrolled in a {dept} course.",
              "Which students take at least one course of the {dept} department?"),
             ("Give the names of the students with an enrollment in {dept}.",),
             (("dept", "SELECT DISTINCT dept FROM courses"),)),
)
TEMPLATE_BY_NAME = {t.name: t for t in TEMPLATES}
DBS_PER_SPLIT = 16  # distinct databases per (split, seed, domain)


def make_problem(t: Template, split: str, seed: int, index: int) -> Problem:
    rng = random.Random(f"sql/{split}/{seed}/{t.name}/{index}")
    db_key = f"{split}/{seed}/{rng.randrange(DBS_PER_SPLIT)}"
    path = database(t.domain, db_key)
    values = {}
    if t.params:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        for ph, q in t.params:
            values[ph] = rng.choice(sorted(r[0] for r in con.execute(q)))
        con.close()
    phrasings = t.train_phrasings if split == "train" else t.heldout_phrasings
    phrasing = rng.randrange(len(phrasings))
    return Problem(phrasings[phrasing].format(**values), t.sql.format(**values), t.domain, db_key, t.tables, t.name,
                   phrasing, t.level, split, f"{split}-{seed}-{t.name}-{index}")


def problems(split: str = "train", n: int = 100, seed: int = 0, levels=(1, 2, 3), domains=None) -> list[Problem]:
    if split not in ("train", "heldout"):
        raise ValueError("split must be 'train' or 'heldout'")
    chosen = [t for t in TEMPLATES if t.level in tuple(levels) and (not domains or t.domain in domains)]
    if not chosen:
        raise ValueError(f"no sql template matches levels={levels} domains={domains}")
    return [make_problem(chosen[i % len(chosen)], split, seed, i // len(chosen)) for i in range(n)]


# ----------------------------------------------------------------------------------------------------
# the environment

_PRINTF = re.compile(r"\b(?:printf|format)\s*\(", re.I)  # give NULL for a string over MAX_VALUE_BYTES


@dataclass
class SqlConfig(Options):
    """The SQL env's options (``--env-option KEY=VALUE``, the Lab's form)."""

    levels: tuple[int, ...] = option((1, 2, 3), "Difficulty levels: 1 = one table, 2 = aggregation / ordering, "
                                     "3 = joins.", choices=(1, 2, 3))
    domains: tuple[str, ...] = option((), "Database schemas to draw from; empty = all.", choices=DOMAINS)
    max_tool_calls: int = option(4, "Tool calls allowed; one more call ends the episode with reward 0.", low=0,
                                 high=64, aliases=("max_turns",))
    max_rows: int = option(20, "Rows a query returns (more are cut, and the result says so).", low=1, high=1000)
    time_limit_s: float = option(1.0, "Seconds a query may run before it is aborted.", low=0.01, high=30.0)
    max_result_chars: int = option(1500, "Characters of one <result> block.", low=50, high=100000)


def format_rows(cols: list[str], rows: list[tuple], truncated: bool, max_chars: int) -> str:
    lines = [" | ".join(cols)] + [" | ".join("NULL" if v is None else str(norm_value(v)) for v in r) for r in rows]
    if truncated:
        lines.append(f"... (more rows; only {len(rows)} shown)")
    text = "\n".join(lines)
    return text if len(text) <= max_chars else text[:max_chars] + " ... (cut)"


class SqlEnv:
    """One episode on one :class:`Problem`; see the module docstring for the protocol."""

    tool = TOOL
    stop_strings = (TOOL.call_close, TOOL.answer_close)

    def __init__(self, problem: Problem, config: SqlConfig | None = None):
        self.problem = problem
        self.config = config or SqlConfig()
        self.tool_calls = 0
        self._con: sqlite3.Connection | None = None

    @property
    def con(self) -> sqlite3.Connection:
        if self._con is None:
            self._con = connect_readonly(self.problem.db_path)
        return self._con

    def close(self):
        if self._con is not None:
            self._con.close()
            self._con = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def reset(self) -> list[dict[str, str]]:
        self.tool_calls = 0
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": self.problem.question}]

    def _query(self, sql: str):
        c = self.config
        return run_query(self.con, sql, c.max_rows, c.time_limit_s)

    def tool_result(self, command: str) -> str:
        """The text of a tool's answer (never raises)."""
        words = command.strip().split(None, 1)
        if not words:
            return "error: empty command; use tables, describe TABLE or query SQL"
        verb, rest = words[0].lower(), (words[1] if len(words) > 1 else "")
        tables = [r[0] for r in _schema(self.problem.db_path)]
        if verb == "tables":
            return ", ".join(tables)
        if verb == "describe":
            name = rest.strip().strip("`\"'[];").lower()
            if name not in tables:
                return f"error: no table {name[:60]!r}; tables: {', '.join(tables)}"
            cols = _columns(self.problem.db_path, name)
            cols_, rows, _ = self._query(f"SELECT * FROM {name} LIMIT 3")
            return ("columns: " + ", ".join(f"{n} {t}" for n, t in cols) + "\n"
                    + format_rows(cols_, rows, False, self.config.max_result_chars))
        if verb == "query":
            try:
                cols, rows, trunc = self._query(rest)
            except QueryError as e:
                return f"error: {e}"
            text = format_rows(cols, rows, trunc, self.config.max_result_chars)
            if _PRINTF.search(rest) and any(v is None for row in rows for v in row):
                # this SQLite's printf/format give NULL, not an error, for a string over the limit
                text += f"\n(note: printf and format give NULL for a string over {MAX_VALUE_BYTES} bytes)"
            return text
        return f"error: unknown command {verb[:40]!r}; use tables, describe TABLE or query SQL"

    def score(self, sql: str) -> tuple[bool, str | None]:
        try:
            _, rows, trunc = run_query(self.con, sql, 10000, self.config.time_limit_s)
        except QueryError as e:
            return False, str(e)
        _, gold, _ = run_query(self.con, self.problem.gold_sql, 10000, 30.0)
        correct = (not trunc) and results_match(rows, gold, has_order_by(self.problem.gold_sql))
        if not correct and _PRINTF.search(sql) and any(v is None for row in rows for v in row):
            return False, f"printf and format give NULL for a string over {MAX_VALUE_BYTES} bytes"
        return correct, None

    def step(self, model_text: str) -> StepResult:
        action = TOOL.first_action(model_text)
        base = {"tool_calls": self.tool_calls}
        if action is not None and action[0] == "answer":
            sql = action[1].group(1).strip()
            correct, err = self.score(sql)
            self.close()
            return StepResult(None, True, float(correct), {**base, "correct": correct, "answer": sql, "error": err})
        if action is None:
            self.close()
            return StepResult(None, True, 0.0, {**base, "correct": False, "answer": None})
        if self.tool_calls >= self.config.max_tool_calls:
            self.close()
            return StepResult(None, True, 0.0, {**base, "correct": False, "answer": None, "truncated": True})
        self.tool_calls += 1
        return StepResult(TOOL.result(self.tool_result(action[1].group(1))), False, 0.0,
                          {"tool_calls": self.tool_calls})


@lru_cache(maxsize=256)
def _schema(path: str) -> tuple[tuple[str, str], ...]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return tuple(con.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name"))
    finally:
        con.close()


@lru_cache(maxsize=1024)
def _columns(path: str, table: str) -> tuple[tuple[str, str], ...]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:  # table is one of the database's own table names (checked by the caller)
        return tuple((r[1], r[2]) for r in con.execute(f"PRAGMA table_info({table})"))
    finally:
        con.close()


def demonstration(problem: Problem) -> list[tuple[str, str]]:
    """Describe the tables the gold query reads, then answer with the gold query."""
    env = SqlEnv(problem, SqlConfig())
    segs: list[tuple[str, str]] = []
    for t in problem.tables:
        call = f"{TOOL.call_open}describe {t}{TOOL.call_close}"
        segs += [("model", call), ("env", env.step(call).observation)]
    segs.append(("model", f"{TOOL.answer_open}{problem.gold_sql}{TOOL.answer_close}"))
    env.close()
    return segs


def _problems(split: str, n: int, seed: int, config: SqlConfig) -> list[Problem]:
    return problems(split, n, seed, levels=config.levels, domains=config.domains or None)


SPEC = EnvSpec("sql", SqlConfig, _problems, SqlEnv, demonstration,
               title="text-to-SQL with database tools")
ENV_SPECS = (SPEC,)  # collected by envs.ENVS
make = SPEC.make


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ..implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("sql-grpo", "Text-to-SQL agent with database tools (GRPO)", "grpo", "sql", "An agent that lists tables, describes them and runs read-only queries on a generated SQLite "
                   "database, rewarded by execution match of its final query with the gold query.",
                   nodes=("other-table",),
                   changes="Keeps what Spider/BIRD-style text-to-SQL RL measures: a natural-language question over a "
                           "real relational database, a gold query, and execution match (same result set, ordered "
                           "only when the gold query orders) as the reward, plus the agentic part (inspect the schema "
                           "and try queries before answering). Simplifies: two small generated schemas (shop, school) "
                           "with tens of rows instead of hundreds of real databases, templated questions in three "
                           "levels (filter/count, aggregation/ordering, joins), and no value linking or dirty data. "
                           "Every query runs read-only (mode=ro, query_only, an authorizer, a time and row limit)."),
)
