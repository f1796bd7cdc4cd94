"""Demonstrations under the run's env options (``EnvSpec.demonstrate``, ``sft.demonstration_sample``): an env
whose transcript depends on its options (FrozenLake's and Sokoban's moves per tag and planner hints) is
demonstrated in the format the run's rollouts are played in; any other env keeps the transcript and prompt
written for its defaults; the trainer's warm start passes the run's options."""
import pytest

from reference_impls import sft
from reference_impls.algorithms.dpo import dpo
from reference_impls.envs import get_env
from reference_impls.envs.gridgames import TOOL, parse_moves
from reference_impls.rollout import render_prompt


def _tag_moves(text: str) -> list[str]:
    """The moves of a model turn's <move> tag, parsed as the env parses them."""
    kind, match = TOOL.first_action(text)
    assert kind != "answer", text
    moves, error = parse_moves(match.group(1))
    assert error is None, error
    return moves


def _model_moves(segments):
    return [_tag_moves(text) for role, text in segments if role == "model"]


def _replay(spec, problem, segments, **options):
    """Play the model segments in a fresh env with ``options``; check each observation; return the last result."""
    env = spec.make(problem, **options)
    env.reset()
    model = [text for role, text in segments if role == "model"]
    observations = [text for role, text in segments if role == "env"]
    result = None
    for i, text in enumerate(model):
        result = env.step(text)
        if not result.done:
            assert result.observation == observations[i]
    return result


@pytest.mark.parametrize("name", ["frozenlake", "sokoban"])
@pytest.mark.parametrize("moves", [1, 2, 5])
def test_grid_demonstration_plays_the_runs_moves_per_tag(name, moves):
    spec = get_env(name)
    for problem in spec.problems("train", n=6, seed=1, levels=(1, 2)):
        segments = spec.demonstrate(problem, {"moves_per_turn": moves})
        tags = _model_moves(segments)
        assert all(len(t) <= moves for t in tags) and sum(map(len, tags)) == len(problem.plan)
        assert [m for t in tags for m in t] == list(problem.plan)
        end = _replay(spec, problem, segments, moves_per_turn=moves, max_turns=64)
        assert end.done and end.info["correct"]


def test_default_options_give_the_same_demonstration_as_before():
    # the shipped warm starts were demonstrated at the env's defaults: those transcripts must not change
    spec = get_env("frozenlake")
    for problem in spec.problems("train", n=6, seed=0, levels=(1, 2, 3)):
        assert spec.demonstrate(problem, {}) == spec.demonstrate(problem, None) == spec.demonstration(problem)
        assert all(len(t) <= 3 for t in _model_moves(spec.demonstration(problem)))


def test_sokoban_demonstration_shows_the_planners_hints_when_the_run_has_them(tiny):
    _, tok = tiny
    spec = get_env("sokoban")
    problem = spec.problems("train", n=1, seed=2, levels=(2,))[0]
    options = {"hint_moves": 4}
    sample = sft.demonstration_sample(tok, spec, problem, options)
    assert sample.prompt_ids == render_prompt(tok, spec.make(problem, **options).reset())
    env_text = [s["text"] for s in sample.segments if s["role"] == "env"]
    plain = [text for role, text in spec.demonstrate(problem, {}) if role == "env"]
    assert env_text and env_text != plain  # the observations carry the hints the run's rollouts see
    end = _replay(spec, problem, spec.demonstrate(problem, options), max_turns=64, **options)
    assert end.info["correct"]


def test_an_env_whose_demonstration_ignores_options_keeps_its_default_prompt(tiny):
    # zoom's demonstration zooms; with max_zooms=0 the prompt would forbid that, so it stays the default's
    _, tok = tiny
    spec = get_env("zoom")
    assert not spec.demonstration_takes_config
    problem = spec.problems("train", n=1, seed=0)[0]
    sample = sft.demonstration_sample(tok, spec, problem, {"max_zooms": 0})
    assert sample.prompt_ids == render_prompt(tok, spec.make(problem).reset())
    assert sample.prompt_ids != render_prompt(tok, spec.make(problem, max_zooms=0).reset())
    default = sft.demonstration_sample(tok, spec, problem)
    assert sample.completion_ids == default.completion_ids and sample.loss_mask == default.loss_mask


def test_demonstrations_pick_the_same_problems_whatever_the_episode_options(tiny):
    _, tok = tiny
    plain = sft.demonstrations(tok, "frozenlake", 6, seed=0)
    one = sft.demonstrations(tok, "frozenlake", 6, seed=0, episode_options={"moves_per_turn": 1})
    assert len(plain) == len(one) == 6
    for a, b in zip(plain, one):
        moves_a = [m for t in _model_moves([(s["role"], s["text"]) for s in a.segments]) for m in t]
        moves_b = [_tag_moves(s["text"]) for s in b.segments if s["role"] == "model"]
        assert all(len(t) == 1 for t in moves_b)
        assert [m for t in moves_b for m in t] == moves_a  # the same plan, one move a tag


def test_dpo_chosen_episode_verifies_under_the_runs_moves_per_tag(tiny):
    _, tok = tiny
    spec = get_env("frozenlake")
    options = {"moves_per_turn": 1, "max_turns": 64}
    problem = spec.problems("train", n=1, seed=4, levels=(2,))[0]
    prompt = render_prompt(tok, spec.make(problem, **options).reset())
    demo = dpo.demonstration_episode(tok, spec, problem, options, prompt)
    assert demo is not None and demo.info["correct"] and demo.turns == len(problem.plan)


def test_the_trainers_warm_start_passes_the_runs_env_options(tmp_path, monkeypatch):
    from reference_impls.run_config import TrainConfig
    from reference_impls.trainer import Trainer

    seen = []
    real = sft.demonstrations

    def spy(*args, **kwargs):
        seen.append(kwargs.get("episode_options"))
        return real(*args, **kwargs)

    monkeypatch.setattr(sft, "demonstrations", spy)
    common = dict(algo="grpo", env="frozenlake", model="tiny", prompts_per_step=2, group_size=2,
                  max_new_tokens_per_turn=6, max_completion_tokens=10, steps=1, sft_steps=1, sft_examples=4)
    trainer = Trainer(TrainConfig(**common, out=str(tmp_path / "a"), env_options={"moves_per_turn": 1}))
    assert seen[-1] is trainer.env_config and seen[-1].moves_per_turn == 1  # the run's own typed config
    Trainer(TrainConfig(**common, out=str(tmp_path / "b"), sft_env="sokoban", env_options={"moves_per_turn": 1}))
    assert seen[-1] is None  # another env's demonstrations are not played under this env's options
