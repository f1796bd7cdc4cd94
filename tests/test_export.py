import csv
import io
import json

from papers import parse_bibtex, to_bibtex, to_csv, to_json


def test_bibtex_round_trip_all_works(catalog):
    works = list(catalog)
    text = to_bibtex(works)
    entries, failed = parse_bibtex(text)
    assert failed == []
    assert [e["key"] for e in entries] == [w.key for w in works]
    for e, w in zip(entries, works):
        assert e["title"] == w.title, w.key
        assert e.get("year") == (str(w.year) if w.year else None), w.key
        assert e["annote"] == w.summary


def test_bibtex_special_characters(catalog):
    w = catalog.get("search-r1").model_copy(update={"title": "A & B: 100% {braces} $x_1$ #1 ~ ^"})
    entries, failed = parse_bibtex(to_bibtex([w]))
    assert failed == [] and entries[0]["title"] == w.title


def test_entry_types(catalog):
    entries, _ = parse_bibtex(to_bibtex(catalog))
    types = {e["key"]: e["entry_type"] for e in entries}
    assert types["ppo"] == "misc"
    conf = next(w for w in catalog if w.venue.startswith("ICLR 2025"))
    assert types[conf.key] == "inproceedings"


def test_csv_and_json(catalog):
    works = catalog.select(node="memory")
    rows = list(csv.DictReader(io.StringIO(to_csv(works))))
    assert [r["key"] for r in rows] == [w.key for w in works]
    assert rows[0]["summary"] == works[0].summary
    data = json.loads(to_json(works))
    assert data[0]["key"] == works[0].key and data[0]["nodes"] == list(works[0].nodes)
