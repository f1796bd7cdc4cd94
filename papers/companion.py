"""A work as a Markdown table row in the format of the survey's companion paper list
(github.com/xhyumiracle/Awesome-AgenticLLM-RL-Papers, README.md), so a user can propose it upstream.

The companion list has one table per section, each with its own columns (read from its README):
  Sec2.7 algorithms   | Method | Year | Objective Type | Clip | KL Penalty | Key Mechanism | Signal | Link | Resource |
  Sec4.1 search       | Method | Category | Base LLM | Link | Resource |
  Sec4.2 code         | Method | RL Reward Type | Base LLM | Link | Resource |
  Sec4.3 math         | Method | Reward | Link | Resource |
  Sec4.4 GUI          | Method | Paradigm | Environment | Link | Resource |
  Sec4.7 multi-agent  | Method | Dynamic | Train | RL Algorithm | Link | Resource |
  Sec5.1 environments | Environment / Benchmark | Agent Capability | Task Domain | Modality | Link | Resource |
  Sec5.2 frameworks   | Framework | Type | Key Features | Link | Resource |
The cells come from the work's row in the matching survey table when it has one, else from its
facts (reward type, tags, year); what is not known is "-", as in the list itself. Link is
``[Paper](url)`` (``[Blog](url)`` for web pages), Resource ``[Code](url)``.
"""
from __future__ import annotations

from dataclasses import dataclass

from papers.schema import Work

# section, table file, columns (header, table column or a function of the work), node ids that choose it
_CAPABILITY_MARKS = {"Reasoning": "①", "Planning": "②", "Tool": "③", "Tool Use": "③", "Memory": "④",
                     "Collaboration": "⑤", "Self-Improve": "⑥", "Self-improve": "⑥"}


@dataclass(frozen=True)
class Section:
    title: str
    table: str
    columns: tuple[tuple[str, str], ...]   # (header, source: table column, "@name", "@year", "@reward", "tag:<prefix>")
    nodes: tuple[str, ...]


SECTIONS = (
    Section("Sec2.7 Agentic RL: Algorithms", "table02_rl_algorithm_variants",
            (("Method", "@name"), ("Year", "year"), ("Objective Type", "objective_type"), ("Clip", "clip"),
             ("KL Penalty", "kl_penalty"), ("Key Mechanism", "key_mechanism"), ("Signal", "signal")), ("algorithms",)),
    Section("Sec4.1 Task: Search & Research Agent", "table04_search_research_agents",
            (("Method", "@name"), ("Category", "category|tag:search-category:"), ("Base LLM", "base_llm")), ("search-research",)),
    Section("Sec4.2 Task: Code Agent", "table05_code_swe_agents",
            (("Method", "@name"), ("RL Reward Type", "reward|@reward"), ("Base LLM", "base_llm")), ("code",)),
    Section("Sec4.3 Task: Mathematical Agent", "table06_math_agents",
            (("Method", "@name"), ("Reward", "reward|@reward")), ("math",)),
    Section("Sec4.4 Task: GUI Agent", "table07_gui_agents",
            (("Method", "@name"), ("Paradigm", "paradigm|tag:gui-paradigm:"), ("Environment", "environment|tag:gui-environment:")),
            ("gui",)),
    Section("Sec4.7 Task: RL in Multi-Agent Systems", "table08_multi_agent_systems",
            (("Method", "@name"), ("Dynamic", "dynamic|tag:mas-dynamic:"), ("Train", "train"), ("RL Algorithm", "rl_algorithm|@algorithms")),
            ("multi-agent",)),
    Section("Sec5.1 Environments", "table09_environments_benchmarks",
            (("Environment / Benchmark", "@name"), ("Agent Capability", "agent_capability|tag:env-capability:"),
             ("Task Domain", "task_domain|tag:env-domain:"), ("Modality", "modality|tag:modality:")), ("environments",)),
    Section("Sec5.2 Frameworks", "table10_rl_frameworks",
            (("Framework", "@name"), ("Type", "type|tag:framework-type:"), ("Key Features", "key_features")), ("frameworks",)),
)
GENERIC = Section("no matching section (Sec4.8 Other Tasks has no table yet)", "", (("Method", "@name"),), ())


@dataclass(frozen=True)
class CompanionRow:
    section: str
    header: str       # the section's header line and separator, for context
    row: str


def _cell(text: object) -> str:
    # the tables store several values with ";", the list writes them with ", " (Embodied, Text Games)
    value = " ".join(str(text or "").replace(";", ", ").split()).replace(" ,", ",").replace("|", "\\|")
    return value or "-"


def _yes_no(header: str, value: str) -> str:
    if header in ("Dynamic", "Train") and value.lower() in ("yes", "no"):
        return "✓" if value.lower() == "yes" else "✗"
    return value


def _capabilities(value: str) -> str:
    marks = [_CAPABILITY_MARKS.get(v.strip(), v.strip()) for v in value.replace(",", ";").split(";") if v.strip()]
    return ", ".join(marks)


def choose_section(catalog, work: Work) -> tuple[Section, dict | None]:
    """The section for the work: the survey table it has a row in, else its placements' task or dimension."""
    rows = catalog.table_rows_for_work(work.key) if work.key in catalog else {}
    for sec in SECTIONS:
        if sec.table in rows:
            return sec, rows[sec.table].to_dict("records")[0]
    placed = set(catalog.placements(work.key, expand=True)) if work.key in catalog else set()
    dims = {catalog.taxonomy[n].dimension for n in placed if n in catalog.taxonomy}
    for sec in SECTIONS[1:]:
        if placed & set(sec.nodes):
            return sec, None
    if work.kind in ("environment", "benchmark"):
        return SECTIONS[6], None
    if work.kind == "framework":
        return SECTIONS[7], None
    if "algorithm" in dims:
        return SECTIONS[0], None
    return GENERIC, None


def _value(work: Work, source: str, table_row: dict | None) -> str:
    for option in source.split("|"):
        if option == "@name":
            return work.display_name
        if option == "@year":
            return str(work.year or "")
        if option == "@reward":
            if work.reward_type:
                return work.reward_type
            continue
        if option == "@algorithms":
            if work.algorithms:
                return ", ".join(work.algorithms)
            continue
        if option.startswith("tag:"):
            prefix = option[4:]
            found = [t[len(prefix):] for t in work.tags if t.startswith(prefix)]
            if found:
                return "; ".join(found)
            continue
        if option == "year" and not table_row:
            return str(work.year or "")
        if table_row and str(table_row.get(option, "")).strip() not in ("", "-"):
            return str(table_row[option])
    return ""


def companion_row(catalog, work: Work) -> CompanionRow:
    section, table_row = choose_section(catalog, work)
    headers, cells = [], []
    for header, source in section.columns:
        value = _yes_no(header, _value(work, source, table_row))
        if header == "Agent Capability":
            value = _capabilities(value)
        headers.append(header)
        cells.append(_cell(value))
    url = work.url or work.arxiv_url
    if work.venue == "GitHub" or (url and url == work.code_url):  # a repository is a resource, not a paper
        url = ""
    label = "Blog" if work.venue == "Web/blog" else "Paper"
    cells.append(f"[{label}]({url})" if url else "-")
    cells.append(f"[Code]({work.code_url})" if work.code_url else "-")
    headers += ["Link", "Resource"]
    header = "| " + " | ".join(headers) + " |\n|" + "|".join("-" * (len(h) + 2) for h in headers) + "|"
    return CompanionRow(section.title, header, "| " + " | ".join(cells) + " |")
