import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def catalog():
    from papers import Catalog

    return Catalog.load()


@pytest.fixture(scope="session")
def taxonomy(catalog):
    return catalog.taxonomy


@pytest.fixture
def data_copy(tmp_path):
    """A writable copy of the shipped data files: (papers data dir, taxonomy data dir)."""
    import shutil

    papers_dir = tmp_path / "papers"
    tax_dir = tmp_path / "taxonomy"
    shutil.copytree(ROOT / "papers" / "data", papers_dir)
    shutil.copytree(ROOT / "taxonomy" / "data", tax_dir)
    return papers_dir, tax_dir
