"""Every implementation shows its own objective (issue 43): the LaTeX comes from its algorithm class, computed
from the row's options beside the loss code (``objective(cfg)``), never written a second time in a row or in
lab.catalog. Fails when two rows that run different losses show the same equation, when an equation's terms
contradict the row's options (a KL term where beta = 0, 1/|o_i| where the loss is token-level, the wrong clip
range), and when the node pages of GRPO, DAPO, GSPO, Dr.GRPO and VinePPO do not each render their own."""
import dataclasses
import re

import pytest

from lab import catalog as lab
from reference_impls import registry
from reference_impls.algorithms.grpo import grpo
from reference_impls.implementations import latex_number
from reference_impls.options import build

ROWS = [row for row in registry.implementations() if row.trains]  # a row that trains nothing shows no loss
KL_TERMS = (r"\mathbb{D}", r"\mathrm{KL}", r"\tfrac{\pi_{old}}{\pi_{ref}}", r"D_{\mathrm{KL}}", r"D_{KL}", r"\pi_{ref}")


def config(impl):
    cls = registry.algorithms()[impl.algo]
    return cls, build(cls.Config, impl.algo_options, impl.id)


def uses_grpo_objective(cls) -> bool:
    """Classes whose shown loss is grpo_objective's (GRPO and the variants that change only the advantage,
    the reward or the sampling)."""
    return issubclass(cls, grpo.GRPO) and cls.objective.__func__ is grpo.GRPO.objective.__func__


def test_every_row_shows_an_equation_and_no_row_writes_a_loss_of_its_own():
    for impl in ROWS:
        assert lab.equation(impl), impl.id
        # a row may state what it adds (an environment's reward); the loss is its algorithm class's
        assert not [t for t in (r"\mathcal{L}", r"\mathcal{J}", r"\max_\theta") if t in impl.equation], impl.id


def test_rows_that_run_different_losses_show_different_equations():
    by_equation: dict[str, list] = {}
    for impl in ROWS:
        by_equation.setdefault(lab.equation(impl), []).append(impl)
    for equation, impls in by_equation.items():
        first_cls, first_cfg = config(impls[0])
        for impl in impls[1:]:
            cls, cfg = config(impl)
            assert (cls, dataclasses.asdict(cfg), impl.equation) == (first_cls, dataclasses.asdict(first_cfg),
                                                                     impls[0].equation), \
                f"{impl.id} and {impls[0].id} run different losses but show the same equation"
    # the comparison rows of one algorithm on several environments run the same loss and show the same terms
    ids = registry.by_id()
    assert lab.equation(ids["calculator-dapo"]) == lab.equation(ids["search-dapo"])


@pytest.mark.parametrize("impl", [i for i in ROWS if uses_grpo_objective(registry.algorithms()[i.algo])],
                         ids=lambda i: i.id)
def test_grpo_family_equation_terms_agree_with_the_row_options(impl):
    cls, cfg = config(impl)
    eq = lab.equation(impl)
    assert (r"\mathbb{D}^{k3}" in eq) == bool(cfg.beta)
    if cfg.beta:
        assert f"-{latex_number(cfg.beta)}\\,\\mathbb{{D}}^{{k3}}" in eq
    assert (r"\frac{1}{|o_i|}" in eq) == (cfg.loss_type == "grpo")  # per-sequence mean only for grpo
    assert (r"\frac{1}{\sum_{i=1}^{B}|o_i|}" in eq) == (cfg.loss_type == "dapo")  # the batch's tokens
    assert (r"L_{\max}" in eq) == (cfg.loss_type == "dr_grpo")  # a constant normaliser
    assert ("s_i" in eq) == (cfg.importance_sampling_level == "sequence")
    assert f"1-{latex_number(cfg.epsilon_low)},1+{latex_number(cfg.epsilon_high)}" in eq
    assert (r"\mathrm{std}_g(\mathrm{acc})>0" in eq) == cfg.dynamic_sampling
    assert (r"R_{len}" in eq) == bool(cfg.overlong_buffer)
    if not cls.advantage_latex(cfg):  # GRPO's own advantage: the std only when scale_rewards
        assert (r"\mathrm{std}_{g(i)}r" in eq) == cfg.scale_rewards


@pytest.mark.parametrize("impl", ROWS, ids=lambda i: i.id)
def test_no_kl_term_is_shown_where_beta_is_zero(impl):
    _, cfg = config(impl)
    if getattr(cfg, "beta", None) == 0:
        assert not [t for t in KL_TERMS if t in lab.equation(impl)], impl.id


def test_config_changes_change_the_equation():
    """The objective is computed from the options, so each option that changes the loss changes the LaTeX."""
    base = grpo.Config()
    variants = [dict(loss_type="dapo"), dict(loss_type="dr_grpo"), dict(scale_rewards=False), dict(beta=0.04),
                dict(epsilon_high=0.28), dict(importance_sampling_level="sequence"), dict(dynamic_sampling=True),
                dict(overlong_buffer=16)]
    shown = {grpo.GRPO.objective(base)} | {grpo.GRPO.objective(dataclasses.replace(base, **v)) for v in variants}
    assert len(shown) == len(variants) + 1


def test_gspo_row_shows_its_sequence_clip():
    gspo = registry.by_id()["calculator-gspo"]
    eq = lab.equation(gspo)
    assert "s_i" in eq and r"\mathrm{clip}(s_i,1-0.0003,1+0.0004)" in eq


NODES = {"alg-grpo": "calculator-grpo", "alg-dapo": "calculator-dapo", "alg-gspo": "calculator-gspo",
         "alg-dr-grpo": "calculator-dr-grpo", "alg-vineppo": "calculator-vineppo"}


def test_node_pages_render_each_implementation_s_own_objective(catalog):
    from app.presentation.node_sections import NodeContext, node_sections

    rendered = {}
    for node, impl_id in NODES.items():
        sections = dict(node_sections(NodeContext(catalog, node, load_grids=lambda: [],
                                                  load_value_searches=lambda _: [])))
        blocks = [b for b in sections["implementations"] if re.search(re.escape(impl_id), str(b.parts[-1]))]
        latex = [p.body for b in blocks for p in b.parts if p.kind == "latex"]
        assert latex == [lab.equation(registry.by_id()[impl_id])], node
        rendered[node] = latex[0]
    assert len(set(rendered.values())) == len(NODES)  # five different objectives
    assert r"\frac{1}{\sum_{i=1}^{B}|o_i|}" in rendered["alg-dapo"] and r"\mathbb{D}" not in rendered["alg-dapo"]
    assert r"\frac{1}{|o_i|}" not in rendered["alg-dapo"] and "1+0.28" in rendered["alg-dapo"]
    assert r"\mathrm{std}" not in rendered["alg-dr-grpo"] and r"L_{\max}" in rendered["alg-dr-grpo"]
    assert r"\hat V(s_j)" in rendered["alg-vineppo"] and r"\mathrm{clip}\big(m_{i,t}\mathbb{D}^{k3}_{i,t},0,10\big)" \
        in rendered["alg-vineppo"]


@pytest.mark.parametrize("module,option,value,shown", [
    ("reference_impls.algorithms.grpo.gmpo", "token_mean", "arithmetic", r"\frac{1}{|o_i|}\sum_t m_{i,t}\min"),
    ("reference_impls.algorithms.reinforce.rloo", "baseline", "batch", r"\frac{1}{B-1}"),
    ("reference_impls.algorithms.ppo.vineppo", "intermediate_states", False, r"\hat V(s_j)=\hat V(s_0)"),
])
def test_the_claims_ablations_change_the_equation(module, option, value, shown):
    """Issue 61's ablation switches change the loss, so each changes the LaTeX its algorithm shows."""
    import importlib

    mod = importlib.import_module(module)
    cls = next(c for c in registry.algorithms().values() if c.Config is mod.Config)
    base = mod.Config()
    ablated = cls.objective(dataclasses.replace(base, **{option: value}))
    assert ablated != cls.objective(base) and shown in ablated and shown not in cls.objective(base)
