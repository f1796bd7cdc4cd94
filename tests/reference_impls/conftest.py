import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# tests marked `slow` (the converted SmolLM2 model, minutes of CPU) are deselected by pytest.ini's
# addopts (-m "not slow"); `pytest -m slow` runs them


@pytest.fixture(scope="session")
def tiny():
    from reference_impls.models import load_policy

    return load_policy("tiny", device="cpu", seed=0)
