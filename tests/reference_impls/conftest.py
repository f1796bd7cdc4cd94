import copy
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# tests marked `slow` (the converted SmolLM2 model, minutes of CPU) are deselected by pytest.ini's
# addopts (-m "not slow"); `pytest -m slow` runs them


@pytest.fixture(scope="session")
def tiny():
    """The tiny model and its tokenizer, shared by the whole session: for tests that do not change the model
    (those that train or otherwise change it take ``fresh_tiny``)."""
    from reference_impls.models import load_policy

    return load_policy("tiny", device="cpu", seed=0)


@pytest.fixture(scope="session")
def fresh_tiny():
    """``fresh_tiny(seed=0) -> (model, tokenizer)``: a private copy of ``load_policy("tiny", device="cpu",
    seed=seed)`` for a test that trains or otherwise changes the model. Each seed's model is built once per
    session and deep-copied (tens of ms instead of about a second, most of it the tokenizer); the tokenizer
    is shared, as ``tiny``'s is (nothing in the project changes a tokenizer)."""
    from reference_impls.models import load_policy

    built: dict[int, tuple] = {}

    def make(seed: int = 0):
        if seed not in built:
            built[seed] = load_policy("tiny", device="cpu", seed=seed)
        model, tok = built[seed]
        return copy.deepcopy(model), tok

    return make
