"""The catalog of works: loading, validation, lookups, export (and search, in papers.search)."""
from papers.catalog import Catalog, UnknownKeyError
from papers.export import FORMATS, parse_bibtex, to_bibtex, to_csv, to_format, to_json
from papers.schema import KINDS, Work



def load_catalog(include_user_works: bool = True) -> Catalog:
    """The shipped catalog plus, when the local store exists, the user's imported works."""
    catalog = Catalog.load()
    if include_user_works:
        from papers.userstore import default_store_path, UserStore

        if default_store_path().exists():
            catalog = catalog.with_works(UserStore().works())
    return catalog


__all__ = ["load_catalog", "Catalog", "KINDS", "UnknownKeyError", "Work", "parse_bibtex", "to_bibtex", "to_csv", "to_json", "to_format",
           "FORMATS"]
