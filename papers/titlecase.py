"""Restore the casing of method names and acronyms in titles printed lower-case in a reference list.

"Search-r1: Training llms to reason ..." -> "Search-R1: Training LLMs to reason ...".
Only words we know are re-cased; every other word keeps the casing it had, so the restoration can
never invent capitals. The original title is always kept beside the display title.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

ACRONYMS = (
    "AI AGI API APIs BERT CoT DAPO DPO GAE GPT GRPO GSPO GUI GUIs HTML IDE IPO JSON KL KTO KV LLM LLMs "
    "LM LMs LoRA MARL MCP MCTS MDP MDPs ML MLE MLLM MLLMs MoE NLP OCR PPO POMDP POMDPs PRM PRMs QA RAG RL "
    "RLHF RLAIF RLVR RLOO SFT SQL SWE TIR UI VLA VLAs VLM VLMs VQA LMM LMMs 2D 3D 4D R1 o1 o3 o4 AIME"
).split()
BRANDS = (
    "DeepSeek Qwen Llama LLaMA ChatGPT OpenAI Minecraft Python GitHub Android WebShop ALFWorld "
    "ScienceWorld Atari Wikipedia Kimi Gemini Claude Anthropic Google StarCraft Isabelle Coq "
    "AlphaGo AlphaZero MuZero Markov Bellman Monte Carlo Transformer Transformers Lean4 Mistral "
    "Internet Web WebArena SWE-bench Verilog Text-to-SQL"
).split()

_TOKEN = re.compile(r"^([\"'(\[{]*)(.*?)([\"')\]}:;,.?!]*)$")


def _is_distinctive(name: str) -> bool:
    """A name safe to apply to other works' titles: has a digit, hyphen or inner capital."""
    if " " in name or len(name) < 3:
        return False
    return bool(re.search(r"\d|-|.[A-Z]", name)) and not name.isupper() or name.isupper() and len(name) >= 4


def _case_map(own_names: Iterable[str], known_names: Iterable[str]) -> dict[str, str]:
    mapping: dict[str, str] = {}
    for name in known_names:
        name = name.strip()
        if _is_distinctive(name):
            mapping.setdefault(name.lower(), name)
    for word in BRANDS + ACRONYMS:
        mapping[word.lower()] = word
    for name in own_names:  # a work's own names win over everything else
        for part in name.strip().split():
            if len(part) > 1 and part.lower() != part:
                mapping[part.lower()] = part
    return mapping


def _recase_word(core: str, mapping: dict[str, str]) -> str:
    low = core.lower()
    if low in mapping:
        return mapping[low]
    if low.endswith("s") and low[:-1] in mapping and mapping[low[:-1]].isupper():
        return mapping[low[:-1]] + "s"  # plural acronym: llms -> LLMs
    if "-" in core or "/" in core:
        parts = re.split(r"([-/])", core)
        return "".join(p if p in "-/" else _recase_word(p, mapping) for p in parts)
    return core


def restore_title_case(
    title: str, own_names: Iterable[str] = (), known_names: Iterable[str] = ()
) -> str:
    """Return ``title`` with known names and acronyms re-cased and the first letter capitalised."""
    own_names = [n for n in own_names if n and n.strip()]
    mapping = _case_map(own_names, known_names)
    # Multi-word own names ("Deep Research") are matched as phrases first.
    for name in own_names:
        if " " in name.strip():
            title = re.sub(rf"(?i)(?<!\w){re.escape(name.strip())}(?!\w)", name.strip(), title)
    pieces = re.split(r"(\s+)", title)
    out = []
    for piece in pieces:
        m = _TOKEN.match(piece)
        if not piece.strip() or not m:
            out.append(piece)
            continue
        lead, core, trail = m.groups()
        out.append(lead + _recase_word(core, mapping) + trail)
    result = "".join(out)
    return result[:1].upper() + result[1:] if result else result
