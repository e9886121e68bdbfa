"""Benchmark of ``ovtui utility`` on the sample environment: the utility of every experience of a
trained sample workspace, the agent runs it cost, and its wall time against one eval measured in
the same run.

A sample workspace is trained (its three epochs, every plan applied); then every experience is
measured through ``Workspace.utility_plan`` and ``Workspace.utility`` on the train split, with the
tokens each adds per case counted with OpenAI's cl100k encoding (a real tokenizer: the rank file
under ``shared/tokenizers/``, loaded through ``ovtui.llm.tokens`` as ``bench/llm_calls.py`` loads
it) and, beside it, the product's own estimate. The floor is ``Workspace.evaluate`` of the current
policy on the same split. Run from the repository root::

    .venv/bin/python bench/utility.py [--trials 1]

The last line printed is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from llm_calls import find_encoding_file, load_cl100k

from ovtui.environments.sample.workspace import write_sample_workspace
from ovtui.llm.budget import estimate_tokens
from ovtui.train.utility import prompt_block
from ovtui.wiring.services.measures import UtilityOptions
from ovtui.wiring.workspace import TrainOptions, Workspace

SPLIT = "train"


async def _run(root: Path, trials: int) -> dict[str, object]:
    workspace = Workspace(root)
    await workspace.runs.train(TrainOptions(approve="all", eval_split=None))
    cl100k = load_cl100k(find_encoding_file())
    started = time.perf_counter()
    floor = await workspace.runs.evaluate(split=SPLIT, trials=trials)
    eval_s = time.perf_counter() - started
    started = time.perf_counter()
    plan = await workspace.measures.utility_plan(UtilityOptions(split=SPLIT, trials=trials))
    outcome = await workspace.measures.utility(plan, tokens=cl100k)
    utility_s = time.perf_counter() - started
    by_name = plan.policy.by_name()
    experiences = {
        e.name: {
            "verdict": e.verdict,
            "delta": round(e.delta, 4),
            "ci": [round(x, 4) for x in e.ci or []],
            "cases": len(e.cases),
            "tokens_per_case": e.tokens_per_case,
            "estimated_tokens_per_case": estimate_tokens(prompt_block(by_name[e.name])),
            "calls": e.calls,
        }
        for e in outcome.measured
    }
    shared = 2 * plan.trials * len(plan.cases)  # the policy on every case, and its A/A null
    return {
        "bench": "utility",
        "split": SPLIT,
        "trials": plan.trials,
        "experiences": len(plan.policy.policies),
        "measured": len(outcome.measured),
        "unmeasured": len(plan.unmeasured),
        "verdicts": dict(Counter(e.verdict for e in outcome.measured)),
        "cases": len(plan.cases),
        "agent_calls": shared + sum(e.calls for e in outcome.measured),
        "estimated_agent_calls": plan.calls,
        "eval_calls": floor.stages[0].cases * plan.trials,
        "utility_s": round(utility_s, 3),
        "eval_floor_s": round(eval_s, 3),
        "utility_ratio_to_eval": round(utility_s / eval_s, 2),
        "tokenizer": cl100k.tokenizer,
        "tokens_per_case_total": sum(e.tokens_per_case for e in outcome.measured),
        "proposed_plan_items": 0
        if outcome.plan_id is None
        else len(workspace.review.pending_plan(outcome.plan_id).plan.items),
        "per_experience": experiences,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "ws"
        write_sample_workspace(root)
        figures = asyncio.run(_run(root, args.trials))
    print(
        f"utility of {figures['measured']} of {figures['experiences']} experiences "
        f"({figures['unmeasured']} with no case in the split): {figures['verdicts']}; "
        f"{figures['agent_calls']} agent runs in {figures['utility_s']} s "
        f"(one eval: {figures['eval_calls']} runs in {figures['eval_floor_s']} s, "
        f"{figures['utility_ratio_to_eval']}x)"
    )
    per = figures["per_experience"]
    assert isinstance(per, dict)
    for name, entry in per.items():
        print(f"  {name}: {entry}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
