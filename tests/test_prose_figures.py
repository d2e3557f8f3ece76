"""No figure without a source: every number with a unit (s, min, ms, us, MB, GiB, %, 11x, tok/s, points, a bare
1e-5, "five times longer") in the prose of README.md and docs/*.md, i.e. outside the blocks scripts/render_docs.py
writes, is one of
- SOURCED: a figure from a committed raw file, recomputed here from that file, so that editing the prose or the raw
  file by hand fails;
- SETTINGS: not a measurement but a value the project or another party sets (a default, a tolerance a test asserts,
  a goal, a provider's limit, the machine's size), with the reason, and where the value lives in code, a check of it;
- ELSEWHERE: figures of a page another branch rewrites, named one by one until that branch lands.
Each entry gives how many times its figure appears on its page, so a second, unexplained copy fails too. A figure a
raw file does not hold is deleted from the prose, or moved into a generated block (scripts/pages/)."""
from __future__ import annotations

import importlib
import json
import re
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from paths import REPO

sys.path.insert(0, str(REPO / "scripts"))
render_docs = importlib.import_module("render_docs")
blocks = importlib.import_module("pages.blocks")

_NUM = r"\d+(?:,\d{3})*(?:\.\d+)?"
_WORDS = "two|three|four|five|six|seven|eight|nine|ten|a hundred|a thousand"
_SPACED = (r"ms|us|µs|ns|seconds?|secs?|s|minutes?|mins?|min|hours?|h|days?|KB|kB|KiB|MB|MiB|GB|GiB|TB|TiB|"
           r"tok/s|tokens/s|items/s|it/s|GFLOP/s|TFLOP/s|percentage points|points|pp")
FIGURE = re.compile(
    rf"(?<![\w.,/]){_NUM}(?:\s?(?:-|–|to)\s?{_NUM})?(?:\s?(?:{_SPACED})(?![\w])|(?:%|x|×)(?![\w]))"  # 44 s, 11.5x
    r"|(?<![\w.])\d+(?:\.\d+)?e[-+]?\d+(?!\w|\.\d)"                                                   # 1e-5
    rf"|\b(?:{_NUM}|{_WORDS}) times (?:faster|slower|longer|shorter|more|less|as)\b", re.IGNORECASE)

GENERATED_PAGES = ("docs/reliability.md",)  # written whole by scripts/reliability_table.py


def blank(text: str, markers: list[tuple[str, str]]) -> str:
    """`text` with everything from each start marker to its end marker blanked, lines kept."""
    for start, stop in markers:
        lo, hi = text.index(start), text.index(stop)
        text = text[:lo] + re.sub(r"[^\n]", " ", text[lo:hi]) + text[hi:]
    return text


def prose(page: str, text: str) -> str:
    """`text` without the generated blocks of `page` (render_docs.PAGES): what an author typed."""
    if page not in render_docs.PAGES:
        return text
    make, legacy = render_docs.PAGES[page]
    return blank(text, [blocks.markers(name, legacy) for name in make()])


def figures(text: str) -> list[tuple[int, str]]:
    """(line, figure) for every number with a unit in `text`; a figure broken over two lines is read as one."""
    return [(text.count("\n", 0, m.start()) + 1, re.sub(r"\s+", " ", m.group(0))) for m in FIGURE.finditer(text)]


def pages() -> dict[str, str]:
    found = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    return {p.relative_to(REPO).as_posix(): p.read_text(encoding="utf-8") for p in found
            if p.relative_to(REPO).as_posix() not in GENERATED_PAGES}


def _raw(path: str) -> Any:
    return blocks.read_json(REPO / path)


def _code(module: str, name: str) -> Any:
    """A constant or a default of the package (`module.name`, `Class.field` or `function.parameter`)."""
    import inspect
    owner, _, attr = name.rpartition(".")
    obj = importlib.import_module(module)
    if not owner:
        return getattr(obj, attr)
    target = getattr(obj, owner)
    if inspect.isclass(target) and attr in getattr(target, "__dataclass_fields__", {}):
        return target.__dataclass_fields__[attr].default
    return inspect.signature(target).parameters[attr].default


def _text_has(path: str, snippet: str) -> bool:
    return snippet in (REPO / path).read_text(encoding="utf-8")


def _prefix_cache_gain(raw: dict) -> str:
    r = raw["results"]
    return f"{r['options_nocache']['seconds_vllm'] / r['options_cache']['seconds_vllm']:.1f}x"


def _peak_used(raw: dict) -> str:
    return f"{raw['args']['peak_tflops']:.0f} TFLOP/s"


def _sci(x: float) -> str:
    """x as the prose writes a small difference: two significant digits in e-notation (9.5e-6)."""
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _threads_row(raw: dict) -> str:
    row = next(r for r in raw["rows"] if r["choice"] == "torch threads" and r["scoring"] == "letters")
    return _sci(row["max_abs_delta"])


def _probe_delta(raw: dict) -> str:
    return _sci(raw["rows"]["cpu"]["deltas"]["tree"])


def _least_wrong(raw: dict) -> str:
    """The smallest max |delta| of any engine path the sweep found beyond its exact bound (self-check off)."""
    wrong = [max(v[k] for k in ("letters", "options") if isinstance(v.get(k), (int, float)))
             for r in raw["rows"] for v in (r.get("raw") or {}).values() if isinstance(v, dict)
             and any(isinstance(v.get(k), (int, float)) for k in ("letters", "options"))]
    return _sci(min(w for w in wrong if w > raw["exact_bound"]))


SELFCHECK_COST = "results/benchmarks/engine5_2026-12-02/selfcheck_cost.json"
SELFCHECK_BF16 = "results/benchmarks/engine6_2026-12-03/selfcheck_bfloat16.json"


def _twin_deltas(raw: dict, pick: Callable[..., float]) -> str:
    """The smallest or largest max |delta| of a path on the float32 twin against the twin's plain forward."""
    return _sci(pick(p["twin_vs_twin_plain"] for p in raw["paths"].values()))
# (page, figure, times on the page) -> (raw file, the figure as the raw file gives it)
SOURCED: dict[tuple[str, str, int], tuple[str, Callable[[Any], str]]] = {
    ("docs/backends.md", "11.5x", 1): ("results/benchmarks/vs_vllm_2026-11-25.json", _prefix_cache_gain),
    ("docs/performance.md", "790 TFLOP/s", 1): ("results/benchmarks/h100_2026-11-24/speed_gemma-3-1b.json",
                                                _peak_used),
    ("docs/invariance.md", "9.5e-6", 1): ("results/benchmarks/invariance_2026-12-02_avx512.json", _threads_row),
    ("docs/invariance.md", "2.1e-5", 1): ("results/benchmarks/invariance_2026-12-02_avx2_forced.json", _threads_row),
    ("docs/support.md", "5.8e-5", 1): (SELFCHECK_COST, _probe_delta),
    ("docs/support.md", "1.2e-4", 1): ("results/benchmarks/engine5_2026-12-02/selfcheck_cost_avx2_forced.json",
                                       _probe_delta),
    ("docs/support.md", "8.8e-3", 1): ("results/tests/support_sweep.json", _least_wrong),
    ("docs/support.md", "2.94 s", 1): (SELFCHECK_COST, lambda r: f"{r['rows']['cpu']['first_seconds']:.2f} s"),
    ("docs/support.md", "2.0%", 1): (SELFCHECK_COST,
                                     lambda r: f"{r['rows']['cpu']['first_seconds'] / r['exam_run']['seconds']:.1%}"),
    ("docs/support.md", "143.6 s", 1): (SELFCHECK_COST, lambda r: f"{r['exam_run']['seconds']:.1f} s"),
    ("docs/support.md", "2.5 ms", 1): (SELFCHECK_COST, lambda r: f"{r['rows']['cpu']['later_seconds'] * 1e3:.1f} ms"),
    ("docs/support.md", "2.9e-5", 1): (SELFCHECK_BF16, lambda r: _twin_deltas(r, min)),
    ("docs/support.md", "5.4e-5", 1): (SELFCHECK_BF16, lambda r: _twin_deltas(r, max)),
    ("docs/support.md", "5.9 s", 1): (SELFCHECK_BF16, lambda r: f"{r['verdict_with_twin']['seconds']:.1f} s"),
    ("docs/support.md", "2.4 s", 1): (SELFCHECK_BF16, lambda r: f"{r['twin_seconds']:.1f} s"),
}

TESTED_1E4 = ("the engine's tolerance against the naive path, asserted by tests/backends/hf/test_block.py",
              lambda: _text_has("tests/backends/hf/test_block.py", "TOL = 1e-4"))
RULE_1E6 = ("the equality rule's tolerance (records.equality.SCORE_ATOL), a setting",
            lambda: _code("mcqa_toolkit.records.equality", "SCORE_ATOL") == 1e-6)
# (page, figure, times on the page) -> (why it is not a measurement, a check of the value where it lives, or None)
SETTINGS: dict[tuple[str, str, int], tuple[str, Callable[[], bool] | None]] = {
    ("docs/backends.md", "1 s", 1): ("RetryPolicy.backoff's default",
                                     lambda: _code("mcqa_toolkit.backends.http", "RetryPolicy.backoff") == 1.0),
    ("docs/backends.md", "60 s", 1): ("RetryPolicy.max_backoff's default",
                                      lambda: _code("mcqa_toolkit.backends.http", "RetryPolicy.max_backoff") == 60.0),
    ("docs/cluster.md", "1e-6", 2): RULE_1E6,
    ("docs/invariance.md", "1e-6", 1): RULE_1E6,
    ("docs/cluster.md", "30 min", 1): ("the pool's default `stall_seconds`",
                                       lambda: _code("mcqa_toolkit.run.pool.driver", "RayPool.stall_seconds")
                                       == 1800.0),
    ("docs/course_exams.md", "2 points", 1): ("the multiple-answer rule's partial credit (records.grading)",
                                              lambda: _text_has("mcqa_toolkit/records/grading.py", "min(2.0, pts)")),
    ("docs/dif.md", "95%", 1): ("the plotted interval's definition (1.96 SE, report/plots/dif.py)",
                                lambda: _text_has("mcqa_toolkit/report/plots/dif.py", "1.96 * se[m]")),
    ("docs/enem.md", "2 points", 1): ("the agreement table's columns, within 1 and 2 points (enem.agreement)",
                                      lambda: "n_within_2" in _code("mcqa_toolkit.enem.agreement", "COUNTS")),
    ("docs/enem.md", "90%", 1): ("the share of exact cases from which a booklet counts as reproduced",
                                 lambda: _code("mcqa_toolkit.enem.reproducibility", "REPRODUCED_AT") == 0.9),
    ("docs/interop.md", "1e-3", 1): ("the tolerance tests/interop/test_real_tools.py asserts",
                                     lambda: _text_has("tests/interop/test_real_tools.py", "ATOL = 1e-3")),
    ("docs/interop.md", "5%", 1): ("measure.pride's default `share`",
                                   lambda: _code("mcqa_toolkit.measure.pride", "pride.share") == 0.05),
    ("docs/invariance.md", "1e-4", 4): TESTED_1E4,
    ("README.md", "1e-4", 1): TESTED_1E4,
    ("docs/backends.md", "1e-4", 1): TESTED_1E4,
    ("README.md", "1e-3", 1): ("the self-check's fp32 bound (backends.hf.selfcheck.FP32_BOUND), a setting",
                               lambda: _code("mcqa_toolkit.backends.hf.selfcheck", "FP32_BOUND") == 1e-3),
    ("docs/support.md", "1e-3", 1): ("the self-check's fp32 bound (backends.hf.selfcheck.FP32_BOUND), a setting",
                                     lambda: _code("mcqa_toolkit.backends.hf.selfcheck", "FP32_BOUND") == 1e-3),
    ("docs/performance.md", "1e-4", 1): TESTED_1E4,
    ("docs/testing.md", "1e-4", 1): ("the GPU tier's fp32 tolerance (tests/backends/hf/test_gpu.py)",
                                     lambda: _text_has("tests/backends/hf/test_gpu.py", "1e-4")),
    ("docs/testing.md", "10 s", 1): ("the fuzz tests' time per input before a hang",
                                     lambda: _text_has("tests/faults/test_fuzz_inputs.py", "SECONDS = 10")),
    ("docs/performance.md", "24 GiB", 1): ("the machine's memory, as the page describes the machine", None),
    ("docs/performance.md", "80GB", 1): ("part of the device's product name, NVIDIA H100 80GB HBM3", None),
    ("docs/performance.md", "0.9x", 1): ("issue 42's goal, not a result", None),
    ("docs/performance.md", "4x", 1): ("issue 42's goal against vLLM for letters", None),
    ("docs/performance.md", "10x", 1): ("issue 42's goal against vLLM for options", None),
    ("docs/providers.md", "200 MB", 1): ("OpenAI's batch file limit (backends.providers)",
                                         lambda: _text_has("mcqa_toolkit/backends/providers.py", "200 * 1024 ** 2")),
    ("docs/providers.md", "256 MB", 1): ("Anthropic's batch limit (backends.providers)",
                                         lambda: _text_has("mcqa_toolkit/backends/providers.py", "256 * 1024 ** 2")),
    ("docs/providers.md", "20 MB", 1): ("Gemini's inline batch limit (backends.providers)",
                                        lambda: _text_has("mcqa_toolkit/backends/providers.py", "20 * 1000 ** 2")),
    ("docs/contamination.md", "1e-5", 2): ("the fine-tuning recipe's learning rate (`--lr`)", None),
    ("docs/contamination.md", "28 minutes", 1): ("contamination_validation.py's default `--minutes` per job",
                                                 lambda: _text_has("studies/contamination_validation.py",
                                                                   'default=28.0')),
}

# figures of a page another branch rewrites, until it lands (none now)
ELSEWHERE: dict[tuple[str, str, int], str] = {}


def unexplained(found: dict[str, list[tuple[int, str]]]) -> list[str]:
    """The figures of `found` ({page: figures}) no entry explains, and entries whose count no longer matches."""
    known = {(page, fig): n for page, fig, n in (*SOURCED, *SETTINGS, *ELSEWHERE)}
    bad = []
    for page, figs in found.items():
        counts = Counter(fig for _, fig in figs)
        for line, fig in figs:
            if (page, fig) not in known:
                bad.append(f"{page}:{line}: {fig!r} has no source: render it from its raw file or delete it")
        bad += [f"{page}: {fig!r} appears {n} times, its entry says {known[page, fig]}"
                for fig, n in counts.items() if (page, fig) in known and known[page, fig] != n]
    bad += [f"{page}: {fig!r} is listed but not in the prose: remove its entry" for (page, fig), n in known.items()
            if page in found and not any(f == fig for _, f in found[page])]
    return bad


def test_every_figure_in_prose_has_a_source():
    assert all(p in render_docs.rendered() and p not in render_docs.PAGES for p in GENERATED_PAGES)
    found = {page: figures(prose(page, text)) for page, text in pages().items()}
    assert not unexplained(found), "\n".join(unexplained(found))


@pytest.mark.parametrize("key", list(SOURCED), ids=lambda k: f"{k[0]}:{k[1]}")
def test_a_sourced_figure_is_what_its_raw_file_gives(key):
    path, give = SOURCED[key]
    assert give(_raw(path)) == key[1], f"{key[0]} says {key[1]!r}, {path} gives {give(_raw(path))!r}"


@pytest.mark.parametrize("key", [k for k, (_, check) in SETTINGS.items() if check], ids=lambda k: f"{k[0]}:{k[1]}")
def test_a_setting_states_the_value_in_the_code(key):
    reason, check = SETTINGS[key]
    assert check(), f"{key[0]} says {key[1]!r} ({reason}), the code no longer does"


def test_the_scanner_finds_figures_and_only_figures():
    text = ("Took 44 s and 576 MB (-0.5%); 11.2x faster, 1,134 tok/s, 4-7 minutes, 98.0% exact, 10.0 -> 13.7\n"
            "points,\na few 1e-5, five times longer, 790\nTFLOP/s.\n"
            f"{blocks.begin('b')}\n3.5 s inside a block\n{blocks.end('b')}\n"
            "Not figures: 300 lines, 2 cores, Python 3.11, torch 2.13.0, [0, points], 4 x 4, 0x1F, Min-K%, 4,096-token "
            "rows, 1-minute load, S1-S6.\n")
    blanked = blank(text, [(blocks.begin("b"), blocks.end("b"))])
    assert [f for _, f in figures(blanked)] == ["44 s", "576 MB", "0.5%", "11.2x", "1,134 tok/s", "4-7 minutes",
                                                "98.0%", "13.7 points", "1e-5", "five times longer", "790 TFLOP/s"]
    assert [line for line, _ in figures(blanked)] == [1] * 8 + [3] * 3


def test_a_figure_edited_in_prose_or_in_its_raw_file_fails():
    """Editing a sourced figure in the page, adding a copy of a setting, or moving the raw file under it: each is
    caught; the generated blocks of a real page are not scanned."""
    page = "docs/backends.md"
    text = pages()[page]
    assert "11.5x" in text
    edited = {page: figures(prose(page, text.replace("11.5x", "12.5x")))}
    assert any("'12.5x' has no source" in b for b in unexplained(edited))
    assert any("'11.5x' is listed but not in the prose" in b for b in unexplained(edited))
    doubled = {page: figures(prose(page, text + "\nwaits 60 s\n"))}
    assert any("'60 s' appears 2 times" in b for b in unexplained(doubled))
    path, give = SOURCED[page, "11.5x", 1]
    raw = json.loads((REPO / path).read_text())
    raw["results"]["options_cache"]["seconds_vllm"] *= 1.1
    assert give(raw) != "11.5x"
    perf = pages()["docs/performance.md"]
    assert "36 us per launch" in perf and "36 us" not in [f for _, f in figures(prose("docs/performance.md", perf))]
