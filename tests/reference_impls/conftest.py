import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: needs the converted SmolLM2 model; runs only with ATLAS_RUN_SLOW=1")


def pytest_collection_modifyitems(config, items):
    if os.environ.get("ATLAS_RUN_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: set ATLAS_RUN_SLOW=1")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def tiny():
    from reference_impls.models import load_policy

    return load_policy("tiny", device="cpu", seed=0)
