"""Command line: ``python -m papers {stats,show,list,search,...}``.

Unknown keys, nodes or filter values print one line with close matches and exit with code 2.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from papers.authors import display_authors
from papers.catalog import Catalog, UnknownKeyError
from papers.export import FORMATS, to_format
from papers.schema import KINDS, Work
from taxonomy import DataError

EXIT_USAGE = 2


def _catalog() -> Catalog:
    from papers import load_catalog

    return load_catalog()


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
    if w.key in cat.attention:
        print(f"needs attention: {cat.attention[w.key]}")
    if w.summary:
        print(w.summary + ("  [low confidence]" if w.summary_confidence == "low" else ""))
    print()
    for label, value in [
        ("key", w.key), ("name", w.name), ("authors", display_authors(w.authors)), ("year", w.year), ("venue", w.venue), ("kind", w.kind),
        ("arXiv", w.arxiv_url), ("url", w.url), ("code", w.code_url),
        ("algorithms", ", ".join(w.algorithms)), ("aliases", ", ".join(w.aliases)),
        ("keywords", ", ".join(w.keywords)), ("reward type", w.reward_type), ("tags", ", ".join(w.tags)),
        ("original title", w.title_original if w.title_original != w.title else ""),
    ]:
        if value:
            print(f"{label:<15} {value}")
    from papers.annotations import AnnotationStore

    store = AnnotationStore()
    for label, value in (("your tags", ", ".join(store.tags_of(w.key))), ("your note", store.note_of(w.key))):
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
    p.add_argument("--author", action="append", metavar="NAME",
                   help="works by this author: full name or family name (repeatable: any of them)")
    p.add_argument("--tag", action="append", metavar="TAG", help="works you tagged TAG (repeatable: any of them)")


def _restrict_keys(cat: Catalog, args: argparse.Namespace) -> list[str] | None:
    """Keys allowed by --author and --tag (each an OR over its values, the two ANDed); None: no restriction."""
    from papers.worksets import restrict_keys

    return restrict_keys(cat, args.author, args.tag)


def _check_years(args: argparse.Namespace) -> None:
    if args.year_from is not None and args.year_to is not None and args.year_from > args.year_to:
        raise ValueError(f"--year-from {args.year_from} is after --year-to {args.year_to}")


def cmd_list(args: argparse.Namespace) -> int:
    _check_years(args)
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
    allowed = _restrict_keys(cat, args)
    works = [w for w in cat if w.key in keys and (allowed is None or w.key in allowed)]
    print(_table(works) if args.format == "table" else to_format(works, args.format), end="" if args.format != "table" else "\n")
    return 0


def _search_filters(args: argparse.Namespace, keys: list[str] | None = None):
    from papers.search import SearchFilters

    return SearchFilters(keys=keys,
        nodes=args.node or [], dimensions=args.dimension or [], year_from=args.year_from, year_to=args.year_to,
        kinds=args.kind or [], algorithms=args.algorithm or [], has_code=args.has_code,
        exclude_nodes=args.exclude_node or [], exclude_kinds=args.exclude_kind or [],
    )


def cmd_search(args: argparse.Namespace) -> int:
    from papers.search import SearchIndex

    if args.k < 0 or args.offset < 0:
        print("error: --k and --offset must not be negative", file=sys.stderr)
        return EXIT_USAGE
    if args.queries_file is not None and (args.query or args.similar):
        print("error: give either QUERY, --similar or --queries-file", file=sys.stderr)
        return EXIT_USAGE
    if args.query and args.similar:
        print("error: give either QUERY or --similar, not both", file=sys.stderr)
        return EXIT_USAGE
    cat = _catalog()
    try:
        filters = _search_filters(args, _restrict_keys(cat, args))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    index = SearchIndex.load_or_build(cat)
    index.validate_filters(filters)  # unknown values fail before any query runs
    if args.queries_file is not None:
        try:
            fh = sys.stdin if str(args.queries_file) == "-" else open(args.queries_file, encoding="utf-8", errors="replace")
        except OSError as e:
            print(f"error: cannot read queries file: {e}", file=sys.stderr)
            return EXIT_USAGE
        with fh:
            for line in fh:
                query = line.rstrip("\r\n")
                if not query.strip():
                    continue
                res = index.search(query, k=args.k, offset=args.offset, filters=filters, mode=args.mode)
                out = {"query": query, "results": [{"key": h.key, "score": round(h.score, 6)} for h in res.hits]}
                print(json.dumps(out, ensure_ascii=False), flush=True)
        return 0
    if args.similar:
        hits = index.similar(keys=[cat.resolve(k).key for k in args.similar], k=args.k, filters=filters)
        total, query = len(hits), "similar to " + ", ".join(args.similar)
    else:
        res = index.search(args.query or "", k=args.k, offset=args.offset, filters=filters, mode=args.mode)
        hits, total, query = res.hits, res.total, res.query
    if args.format in FORMATS and args.format != "json":  # the hits as a reference list
        print(to_format([cat.get(h.key) for h in hits], args.format), end="")
        return 0
    if args.format == "json":
        rows = [dict(h.to_dict(), title=cat.get(h.key).title, year=cat.get(h.key).year, kind=cat.get(h.key).kind) for h in hits]
        print(json.dumps({"query": query, "mode": "similar" if args.similar else args.mode, "total": total, "offset": args.offset, "results": rows},
                         ensure_ascii=False, indent=1))
        return 0
    lines = [f"{'#':>3} {'score':>8}  {'key':<40} {'year':<5} {'kind':<11} title"]
    for i, h in enumerate(hits, args.offset + 1):
        w = cat.get(h.key)
        lines.append(f"{i:>3} {h.score:>8.4f}  {w.key[:40]:<40} {w.year or '':<5} {w.kind:<11} {w.title[:80]}")
        if h.matched_terms:
            lines.append(f"{'':>14}matched: {', '.join(h.matched_terms)}")
    lines.append(f"({total} matching works; showing {len(hits)})")
    print("\n".join(lines))
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from papers.importers import detect_format
    from papers.ingest import check_input_file, import_file
    from papers.userstore import UserStore

    if args.format is None:
        detect_format(args.file)
    check_input_file(args.file, args.encoding)
    catalog = Catalog.load()
    placer = None
    if not args.no_place:
        from papers.placement import Placer, default_encoder

        placer = Placer(catalog, default_encoder(), encode_new=default_encoder(cache_new=False))

    def progress(p: dict) -> None:
        print(f"\rline {p['lines_done']}: {p['added']} added, {p['skipped']} skipped", end="", file=sys.stderr, flush=True)

    report = import_file(args.file, catalog, UserStore(), placer=placer, fmt=args.format,
                         batch_size=args.batch_size, progress=progress, encoding=args.encoding)
    print(file=sys.stderr)
    print(report.summary())
    for line, reason in report.skipped[: args.show_skipped]:
        print(f"  {args.file}:{line}: skipped: {reason}")
    if len(report.skipped) > args.show_skipped:
        print(f"  ... and {len(report.skipped) - args.show_skipped} more")
    return 0


def cmd_user(args: argparse.Namespace) -> int:
    from papers.ingest import accept_placement
    from papers.userstore import UserStore

    store = UserStore()
    if args.action != "list" and not args.key:
        raise ValueError(f"'user {args.action}' needs a work key")
    if args.action == "place" and not args.nodes:
        raise ValueError("'user place KEY' needs at least one node id")
    if args.action == "list":
        attention = Catalog.load().with_works(store.works()).attention
        for w in store.works():
            sugg = ", ".join(f"{n} ({c:.2f})" for n, c in store.suggestions(w.key))
            print(f"{w.key:<40} {w.year or '':<5} {';'.join(w.nodes):<28} {w.title[:70]}" + (f"  [suggested: {sugg}]" if sugg else "")
                  + (f"  [needs attention: {attention[w.key]}]" if w.key in attention else ""))
        for key, problem in store.unreadable():
            print(f"{key:<40} [needs attention: {problem}; delete it with 'user delete {key}']")
    elif args.action == "delete":
        store.delete(args.key)
        print(f"deleted {args.key}")
    elif args.action == "place":
        work = accept_placement(store, Catalog.load(), args.key, args.nodes)
        print(f"{work.key}: {', '.join(work.nodes)}")
    return 0


def cmd_tag(args: argparse.Namespace) -> int:
    from papers.annotations import AnnotationStore

    store, cat = AnnotationStore(), _catalog()
    key = cat.resolve(args.key).key
    if args.command == "tag":
        tags = store.add_tags(cat, key, args.tags)
    else:
        tags = store.remove_tags(cat, key, args.tags)
    print(f"{key}: {', '.join(tags) if tags else '(no tags)'}")
    return 0


def cmd_tags(args: argparse.Namespace) -> int:
    from papers.annotations import AnnotationStore

    store = AnnotationStore()
    if args.key:
        key = _catalog().resolve(args.key).key
        print(f"{key}: {', '.join(store.tags_of(key)) or '(no tags)'}")
        return 0
    tags = store.all_tags()
    for tag, n in tags.items():
        print(f"{tag:<30} {n} work{'s' if n != 1 else ''}")
    if not tags:
        print("(no tags yet: python -m papers tag KEY TAG)")
    return 0


def cmd_note(args: argparse.Namespace) -> int:
    from papers.annotations import AnnotationStore

    store, cat = AnnotationStore(), _catalog()
    key = cat.resolve(args.key).key
    if args.clear:
        print(f"{key}: note removed" if store.clear_note(cat, key) else f"{key}: had no note")
    elif args.text is None:
        print(store.note_of(key) or f"({key} has no note)")
    else:
        text = sys.stdin.read() if args.text == "-" else args.text
        store.set_note(cat, key, text)
        print(f"{key}: note saved ({len(text)} characters)")
    return 0


def cmd_companion_row(args: argparse.Namespace) -> int:
    from papers.companion import companion_row

    cat = _catalog()
    row = companion_row(cat, cat.resolve(args.key))
    print(f"<!-- {row.section} -->\n{row.header}\n{row.row}" if args.with_header else row.row)
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
    p.add_argument("--format", choices=["table", *FORMATS], default="table",
                   help="table, or an export: bibtex, csv, json, cslj (CSL-JSON), ris, arxiv-ids (one id a line); "
                        "csv is for spreadsheets: a cell that starts with = + - @ (or a tab/CR) is written with a "
                        "leading ' so a spreadsheet shows it as text and never runs it as a formula (plain "
                        "numbers such as -0.5 stay numbers); the others are exact")
    p.set_defaults(fn=cmd_list)
    p = sub.add_parser("import", help="import your own works (.bib, arXiv metadata .jsonl, or .csv) into the local store")
    p.add_argument("file", type=Path)
    p.add_argument("--format", choices=["bibtex", "arxiv-jsonl", "csv"], help="default: from the file extension")
    p.add_argument("--no-place", action="store_true", help="skip automatic placement (no embedding)")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--show-skipped", type=int, default=20, help="how many skipped entries to list")
    p.add_argument("--encoding", default="utf-8",
                   help="the file's text encoding (default utf-8, with or without a byte-order mark); "
                        "a file that is not in it is refused with the line of the first bad byte")
    p.set_defaults(fn=cmd_import)
    p = sub.add_parser("user", help="your imported works: list, delete KEY, place KEY NODE [NODE ...]")
    p.add_argument("action", choices=["list", "delete", "place"])
    p.add_argument("key", nargs="?")
    p.add_argument("nodes", nargs="*")
    p.set_defaults(fn=cmd_user)
    for name, helptext in (("tag", "tag a work (shipped or yours): tag KEY TAG [TAG ...]"),
                           ("untag", "remove tags from a work: untag KEY TAG [TAG ...]")):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("key", help="work key, arXiv id or name")
        p.add_argument("tags", nargs="+", metavar="TAG")
        p.set_defaults(fn=cmd_tag)
    p = sub.add_parser("tags", help="every tag with its count, or the tags of one work")
    p.add_argument("key", nargs="?")
    p.set_defaults(fn=cmd_tags)
    p = sub.add_parser("note", help='your note on a work: note KEY "text" (or - for stdin), note KEY to read, --clear')
    p.add_argument("key", help="work key, arXiv id or name")
    p.add_argument("text", nargs="?", help="the note (replaces the old one); '-' reads it from stdin")
    p.add_argument("--clear", action="store_true", help="remove the note")
    p.set_defaults(fn=cmd_note)
    p = sub.add_parser("companion-row", help="the work as a Markdown row of the survey's companion paper list")
    p.add_argument("key", help="work key, arXiv id or name")
    p.add_argument("--with-header", action="store_true", help="also print the section and its table header")
    p.set_defaults(fn=cmd_companion_row)
    p = sub.add_parser("search", help="hybrid (BM25 + embedding) search; an empty QUERY browses the filtered works")
    p.add_argument("query", nargs="?", default="", help="free text (empty: filters only, newest first)")
    p.add_argument("--k", type=int, default=10, help="results per query (default 10)")
    p.add_argument("--offset", type=int, default=0, help="skip this many results (pagination)")
    p.add_argument("--mode", choices=["hybrid", "lexical", "dense"], default="hybrid")
    add_filter_args(p)
    p.add_argument("--dimension", action="append", help="taxonomy dimension of the work's placements (repeatable)")
    p.add_argument("--algorithm", action="append", help="algorithm name such as GRPO, or node id such as alg-grpo (repeatable)")
    p.add_argument("--has-code", dest="has_code", action="store_const", const=True, default=None, help="only works with a code link")
    p.add_argument("--no-code", dest="has_code", action="store_const", const=False, help="only works without a code link")
    p.add_argument("--exclude-node", action="append", help="leave out works under this node (repeatable)")
    p.add_argument("--exclude-kind", action="append", help="leave out works of this kind (repeatable)")
    p.add_argument("--similar", action="append", metavar="KEY", help="works similar to these works instead of a query (repeatable)")
    p.add_argument("--queries-file", metavar="FILE", help="batch: one query per line ('-' for stdin); prints one JSON line per query")
    p.add_argument("--format", choices=["table", *FORMATS], default="table",
                   help="table; json (the results with scores); or the hits exported as bibtex, csv, cslj, ris, arxiv-ids")
    p.set_defaults(fn=cmd_search)
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
    except KeyError as e:  # str() of a KeyError is its repr: print the message itself
        print(f"error: {e.args[0] if e.args else e}", file=sys.stderr)
        return EXIT_USAGE
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return 0
