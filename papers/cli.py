"""Command line: ``python -m papers {stats,show,list,search,...}``.

Unknown keys, nodes or filter values print one line with close matches and exit with code 2.
"""
from __future__ import annotations

import argparse
import json
import sys

from papers.catalog import Catalog, UnknownKeyError
from papers.export import to_format
from papers.schema import KINDS, Work
from taxonomy import DataError

EXIT_USAGE = 2


def _catalog() -> Catalog:
    return Catalog.load()


def _table(works: list[Work]) -> str:
    lines = [f"{'key':<44} {'year':<5} {'kind':<11} title"]
    for w in works:
        lines.append(f"{w.key[:44]:<44} {w.year or '':<5} {w.kind:<11} {w.title[:90]}")
    lines.append(f"({len(works)} works)")
    return "\n".join(lines)


def cmd_stats(args: argparse.Namespace) -> int:
    stats = _catalog().stats()
    if args.json:
        print(json.dumps(stats, indent=1))
    else:
        for k, v in stats.items():
            print(f"{k:<28} {v}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    cat = _catalog()
    w = cat.resolve(args.key)
    if args.json:
        print(json.dumps(w.model_dump(mode="json"), indent=1, ensure_ascii=False))
        return 0
    print(w.title)
    print("=" * min(len(w.title), 100))
    if w.summary:
        print(w.summary + ("  [low confidence]" if w.summary_confidence == "low" else ""))
    print()
    for label, value in [
        ("key", w.key), ("name", w.name), ("year", w.year), ("venue", w.venue), ("kind", w.kind),
        ("arXiv", w.arxiv_url), ("url", w.url), ("code", w.code_url),
        ("algorithms", ", ".join(w.algorithms)), ("aliases", ", ".join(w.aliases)),
        ("keywords", ", ".join(w.keywords)), ("reward type", w.reward_type), ("tags", ", ".join(w.tags)),
        ("original title", w.title_original if w.title_original != w.title else ""),
    ]:
        if value:
            print(f"{label:<15} {value}")
    print("placements:")
    for nid in w.nodes:
        print("  " + " > ".join(cat.taxonomy[p].name for p in cat.taxonomy.path(nid)))
    for name, rows in cat.table_rows_for_work(w.key).items():
        print(f"{cat.tables[name].title}:")
        for rec in rows.to_dict("records"):
            print("  " + "; ".join(f"{k}={v}" for k, v in rec.items() if v and k not in ("work_key", "source")))
    return 0


def add_filter_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--node", action="append", help="taxonomy node id (repeatable; includes its descendants)")
    p.add_argument("--kind", action="append", help=f"one of {', '.join(KINDS)} (repeatable)")
    p.add_argument("--year-from", type=int)
    p.add_argument("--year-to", type=int)


def cmd_list(args: argparse.Namespace) -> int:
    cat = _catalog()
    for node in args.node or []:
        cat.node(node)
    kinds = args.kind or [None]
    nodes = args.node or [None]
    keys: dict[str, Work] = {}
    for node in nodes:
        for kind in kinds:
            for w in cat.select(node=node, kind=kind, year_from=args.year_from, year_to=args.year_to):
                keys[w.key] = w
    works = [w for w in cat if w.key in keys]
    print(_table(works) if args.format == "table" else to_format(works, args.format), end="" if args.format != "table" else "\n")
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m papers", description="The Agentic RL Atlas catalog.")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("stats", help="counts of works, nodes, tables and gaps")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_stats)
    p = sub.add_parser("show", help="every fact about one work (key, arXiv id or name)")
    p.add_argument("key")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_show)
    p = sub.add_parser("list", help="list works, filtered, as a table or an export format")
    add_filter_args(p)
    p.add_argument("--format", choices=["table", "json", "csv", "bibtex"], default="table")
    p.set_defaults(fn=cmd_list)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except UnknownKeyError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return 0
