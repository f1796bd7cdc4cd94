"""Do the SFT demonstrations of every shipped grid and every Lab preset change when the episodes are built
with the run's env options? Compares token ids (prompt, completion, loss mask) of the old path (episodes at
the env's defaults) with the new one (the run's options, where the env declares its demonstration follows them).

    python scripts/check_demonstration_options.py [N]    # N demonstrations per warm start (default 24)
"""
import sys
from lab import catalog
from lab.compare.cell_options import cell_config, chosen_env_options, warm_settings
from lab.compare.grid import GRIDS, Grid
from lab.recipes import PRESETS
from reference_impls.models import load_tokenizer
from reference_impls.sft import demonstrations

tok = load_tokenizer()
N = int(sys.argv[1]) if len(sys.argv) > 1 else 24

def key(samples):
    return [(tuple(s.prompt_ids), tuple(s.completion_ids), tuple(s.loss_mask)) for s in samples]

def check(label, env, n, seed, options, episode):
    try:
        old = key(demonstrations(tok, env, n, seed, options=options))
        new = key(demonstrations(tok, env, n, seed, options=options, episode_options=episode))
    except Exception as e:  # noqa: BLE001 - report and go on
        print(f"ERROR {label}: {type(e).__name__}: {e}"); return
    diff = sum(a != b for a, b in zip(old, new))
    print(f"{'same' if diff == 0 else 'DIFF'} {label}: {diff}/{len(old)} differ  episode={episode}")

seen = set()
for name in sorted(p.stem for p in GRIDS.glob("*.yaml")):
    grid = Grid.load(name)
    for env in grid.envs():
        s = warm_settings(grid, env)
        if s["sft_steps"] <= 0 or s["sft_env"] != env:
            continue
        impl = next(i for i in grid.implementations if catalog.get(i).env == env)
        config = cell_config(grid, impl, grid.warm_seed, s["model"])
        chosen = chosen_env_options(env, config["env_options"])
        options = chosen if grid.warm_on_env_options else None
        check(f"grid {name}/{env}", s["sft_env"], min(s["sft_examples"], N), s["seed"], options, chosen)
for impl in catalog.available():
    for preset in PRESETS:
        try:
            cfg = catalog.preset_config(impl, preset)
        except Exception as e:  # noqa: BLE001 - a preset that does not apply to this implementation
            print(f"skip preset {preset} {impl.id}: {type(e).__name__}: {e}")
            continue
        if cfg.get("sft_steps", 0) <= 0:
            continue
        sft_env = cfg.get("sft_env") or cfg["env"]
        if sft_env != cfg["env"]:
            continue
        k = (sft_env, repr(sorted(cfg["env_options"].items())), cfg.get("seed", 0))
        if k in seen:
            continue
        seen.add(k)
        check(f"preset {preset} {impl.id}", sft_env, min(cfg.get("sft_examples", 96), N), cfg.get("seed", 0),
              None, cfg["env_options"])
