"""The catalog of works: loading, validation, lookups, export (and search, in papers.search)."""
from papers.catalog import Catalog, UnknownKeyError
from papers.datadir import data_dir
from papers.export import parse_bibtex, to_bibtex, to_csv, to_json
from papers.schema import KINDS, Work

__all__ = ["Catalog", "KINDS", "UnknownKeyError", "Work", "data_dir", "parse_bibtex", "to_bibtex", "to_csv", "to_json"]
