"""A population of simulated models whose answers are written by the real tools (lm-evaluation-harness and
inspect_ai), for calibrating and testing item banks when no real population is at hand.

Numbers (`simulate_answers`): model j answers item i correctly with the 3PL probability P_i(theta_j) of the
items' parameters; a wrong answer is a distractor drawn uniformly; the option scores are log-softmax values
in which the chosen option is ahead of every other by `margin`, so the tools' argmax is the simulated answer.

Files: `write_lm_eval_task` writes a multiple-choice task (data JSONL + task YAML), `run_lm_eval` evaluates a
model on it with lm-eval's own evaluator (`simple_evaluate` with a registered LM whose loglikelihood returns
the simulated scores) and saves `--log_samples` files with lm-eval's EvaluationTracker; `run_inspect` runs an
inspect_ai `multiple_choice` task with the `choice` scorer against a model API (registered as `mcqa_sim`) that
answers `ANSWER: <letter>` with the letters' log-probs, and inspect writes the .eval log.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mcqa_toolkit import irt
from mcqa_toolkit.items import LETTERS, Item

__all__ = ["SimulatedAnswers", "simulate_answers", "write_lm_eval_task", "run_lm_eval", "run_inspect"]

TASK = "mcqa_sim"


@dataclass(frozen=True)
class SimulatedAnswers:
    """choice (models, items): chosen option index; scores (models, items, max_options): log-probs per option
    (NaN beyond an item's options); correct (models, items) 0/1; theta (models,)."""

    theta: np.ndarray
    choice: np.ndarray
    scores: np.ndarray
    correct: np.ndarray


def simulate_answers(items: Sequence[Item], theta: Sequence[float], seed: int = 0, margin: float = 1.0,
                     noise: float = 0.5) -> SimulatedAnswers:
    """Seeded answers of models with abilities `theta` to single-answer keyed `items` with `Item.irt`."""
    if any(it.irt is None or it.answer_type != "single" or not isinstance(it.answer, int) for it in items):
        raise ValueError("simulated answers need keyed single-answer items with IRT parameters (Item.irt)")
    rng = np.random.default_rng(seed)
    params = [it.irt for it in items if it.irt is not None]  # every item (checked above)
    a, b, c = (np.array([p[k] for p in params]) for k in range(3))
    t = np.asarray(theta, dtype=float)
    correct = irt.simulate_3pl(t, a, b, c, rng)
    k = np.array([it.n_options for it in items])
    key = np.array([it.answer for it in items])
    wrong = (key + 1 + np.floor(rng.random(correct.shape) * (k - 1)).astype(int)) % k  # a uniform distractor
    choice = np.where(correct == 1, key, wrong)
    raw = rng.normal(0.0, noise, (t.size, len(items), k.max()))
    raw[:, :, :][np.arange(k.max()) >= k[None, :, None].repeat(t.size, 0)] = -np.inf
    others = np.where(np.arange(k.max()) == choice[..., None], -np.inf, raw).max(axis=2)
    np.put_along_axis(raw, choice[..., None], (others + margin)[..., None], axis=2)
    scores = raw - np.logaddexp.reduce(raw, axis=2, keepdims=True)
    scores[np.isneginf(raw)] = np.nan
    return SimulatedAnswers(t, choice, scores, correct.astype(int))


def write_lm_eval_task(items: Sequence[Item], folder: str | Path, task: str = TASK) -> Path:
    """A multiple-choice lm-eval task over `items` (question, choices, label, id): `<folder>/<task>.yaml`."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / f"{task}.jsonl"
    data.write_text("".join(json.dumps({"id": it.item_id, "question": it.stem, "choices": list(it.options),
                                        "label": it.answer, "language": it.language}, ensure_ascii=False) + "\n"
                            for it in items), encoding="utf-8")
    yaml = folder / f"{task}.yaml"
    yaml.write_text(f"task: {task}\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {data.resolve()}\n"
                    "test_split: test\noutput_type: multiple_choice\ndoc_to_text: \"{{question}}\\nAnswer:\"\n"
                    "doc_to_choice: \"{{choices}}\"\ndoc_to_target: label\nmetric_list:\n  - metric: acc\n",
                    encoding="utf-8")
    return yaml


def run_lm_eval(task_dir: str | Path, items: Sequence[Item], scores: np.ndarray, model_name: str,
                out_dir: str | Path, task: str = TASK) -> Path:
    """Evaluate one simulated model (scores (items, max_options)) on the task in `task_dir` with lm-eval and
    save its samples and results under `out_dir`; returns the samples file."""
    from lm_eval import simple_evaluate
    from lm_eval.api.model import LM
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    table = {(f"{it.stem}\nAnswer:", f" {o}"): float(scores[i, j])
             for i, it in enumerate(items) for j, o in enumerate(it.options)}

    class SimulatedLM(LM):
        def loglikelihood(self, requests: Any) -> list[tuple[float, bool]]:
            return [(table[tuple(r.args)], False) for r in requests]

        def loglikelihood_rolling(self, requests: Any) -> list[float]:
            raise NotImplementedError("a simulated model only scores multiple-choice continuations")

        def generate_until(self, requests: Any) -> list[str]:
            raise NotImplementedError("a simulated model only scores multiple-choice continuations")

    tracker = EvaluationTracker(output_path=str(out_dir))
    results = simple_evaluate(model=SimulatedLM(), model_args=f"pretrained={model_name}", tasks=[task],
                              task_manager=TaskManager(include_path=str(task_dir)), log_samples=True,
                              evaluation_tracker=tracker, random_seed=0, numpy_random_seed=0, torch_random_seed=0)
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    tracker.save_results_samples(task_name=task, samples=samples[task])
    return next(Path(out_dir).rglob(f"samples_{task}_*.jsonl"))


def run_inspect(items: Sequence[Item], scores: np.ndarray, choice: np.ndarray, model_name: str,
                log_dir: str | Path, task: str = TASK) -> Path:
    """Evaluate one simulated model with inspect_ai's multiple_choice solver and choice scorer; returns the
    .eval log inspect wrote under `log_dir`."""
    keys = [it.answer for it in items if it.answer_type == "single" and isinstance(it.answer, int)]
    if len(keys) != len(items):
        raise ValueError("run_inspect needs keyed single-answer items (an option index in Item.answer)")
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import (
        ChatCompletionChoice,
        ChatMessageAssistant,
        GenerateConfig,
        Logprob,
        Logprobs,
        ModelAPI,
        ModelOutput,
        TopLogprob,
        get_model,
        modelapi,
    )
    from inspect_ai.scorer import choice as choice_scorer
    from inspect_ai.solver import multiple_choice

    answers = {it.stem: (LETTERS[int(choice[i])], [float(s) for s in scores[i, :it.n_options]])
               for i, it in enumerate(items)}

    class SimulatedAPI(ModelAPI):
        async def generate(self, input: Any, tools: Any, tool_choice: Any, config: GenerateConfig) -> ModelOutput:
            text = input[-1].text
            letter, logps = next(v for stem, v in answers.items() if stem in text)
            top = [TopLogprob(token=f" {LETTERS[j]}", logprob=lp) for j, lp in enumerate(logps)]
            steps = [Logprob(token="ANSWER", logprob=0.0, top_logprobs=[]), Logprob(token=":", logprob=0.0,
                     top_logprobs=[]), Logprob(token=f" {letter}", logprob=logps[LETTERS.index(letter)],
                                               top_logprobs=top)]
            return ModelOutput(model=self.model_name, choices=[ChatCompletionChoice(
                message=ChatMessageAssistant(content=f"ANSWER: {letter}"), stop_reason="stop",
                logprobs=Logprobs(content=steps))])

    modelapi(name="mcqa_sim")(lambda: SimulatedAPI)
    dataset = [Sample(input=it.stem, choices=list(it.options), target=LETTERS[key], id=it.item_id,
                      metadata={"language": it.language}) for it, key in zip(items, keys, strict=True)]
    logs = inspect_eval(Task(dataset=dataset, solver=multiple_choice(), scorer=choice_scorer(), name=task),
                        model=get_model(f"mcqa_sim/{model_name}"), log_dir=str(log_dir), display="none",
                        log_samples=True, score_display=False)
    return Path(logs[0].location)
