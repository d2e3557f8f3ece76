"""run.strategy: the named strategies and strategy() (names, dicts from a params file, overrides; unknown names and
fields refused), validation, and the hash that identifies a run's records: pinned, changed by every field it
covers and by no other."""
from __future__ import annotations

import pytest

from mcqa_toolkit.run.strategy import STRATEGIES, Strategy, build_strategy, strategy


def test_strategy_validation_and_lookup():
    assert strategy("S5").method == "cloze" and STRATEGIES["enem_4shot"].shuffles == 30
    assert strategy({"base": "enem_1shot", "shuffles": 2}).shots == 1
    with pytest.raises(ValueError, match="unknown strategy"):
        strategy("S9")
    with pytest.raises(ValueError, match="unknown Strategy field"):
        strategy("S1", temprature=0.3)
    with pytest.raises(ValueError, match="normalization"):
        Strategy(method="loglik", normalization="mean")
    assert Strategy.first_token(shots=1).hash != Strategy.first_token(shots=4).hash
    assert Strategy.first_token(name="x").hash == Strategy.first_token(name="y").hash


def test_the_hash_is_stable_and_changes_with_every_field_it_covers():
    # run folders record the hash (records.state refuses a folder made with another): a change in how it is
    # computed would refuse every run folder already written
    assert Strategy().hash == "d31bac4811b1"
    assert STRATEGIES["enem_4shot"].hash == "cf79f2d6ab3b" and STRATEGIES["S5"].hash == "83ad7500868f"
    base = Strategy()
    changed = {"method": base.with_(method="generate"), "normalization": Strategy.loglik("char"),
               "shots": base.with_(shots=1), "shot_rule": base.with_(shot_rule="random"),
               "shot_ids": base.with_(shot_ids=("q1",)), "shuffles": base.with_(shuffles=2),
               "keep_original": base.with_(keep_original=False), "language": base.with_(language="en"),
               "style": base.with_(style="enem"), "chat": base.with_(chat=True),
               "temperature": base.with_(temperature=0.5), "max_new_tokens": base.with_(max_new_tokens=5),
               "stop": base.with_(stop=("\n",)), "seed": base.with_(seed=1),
               "adaptive": base.with_(adaptive={"max_items": 3}),
               "structured": Strategy(method="generate", structured=True)}
    reference = {"normalization": Strategy.loglik("token"), "structured": Strategy(method="generate")}
    for field, other in changed.items():
        assert other.hash != reference.get(field, base).hash, field
    assert base.with_(name="other", block_size=2).hash == base.hash  # execution details, not the records
    assert set(changed) | {"name", "block_size"} == set(Strategy.__dataclass_fields__)  # a new field is hashed too
    assert Strategy(shot_ids=["q1"], stop=["x"]).hash == Strategy(shot_ids=("q1",), stop=("x",)).hash


def test_overrides_build_new_strategies_and_leave_the_named_ones_alone():
    assert strategy("S5") is STRATEGIES["S5"]
    s5 = strategy("S5", shots=2)
    assert (s5.name, s5.method, s5.style, s5.shots) == ("S5", "cloze", "cloze", 2) and STRATEGIES["S5"].shots == 0
    mine = strategy({"base": "enem_1shot", "name": "mine", "shuffles": 3}, shuffles=5)  # a params-file dict
    assert (mine.name, mine.method, mine.shots, mine.shuffles, mine.style) == ("mine", "first_token", 1, 5, "enem")
    assert strategy({"method": "generate"}) == Strategy(method="generate")  # no base: the defaults
    own = Strategy.first_token()
    assert strategy(own) is own and strategy(own, seed=2).seed == 2 and own.seed == 0
    assert build_strategy("S4", shots=None, shuffles=None, seed=None) is STRATEGIES["S4"]  # None keeps the value
    assert (build_strategy("S4", shots=1, seed=0).shots, build_strategy("S4", seed=0).shuffles) == (1, 5)
    with pytest.raises(ValueError, match=r"unknown strategy 'S9'; predefined: \['S1', "):
        strategy("S9")
    with pytest.raises(ValueError, match=r"unknown Strategy field\(s\) \['shufles'\]"):
        strategy({"base": "S1", "shufles": 2})
    with pytest.raises(ValueError, match="needs shuffles >= 1"):
        strategy("S1", shuffles=0)


def test_an_unknown_base_is_one_clear_error():
    """A dict naming an unknown base was a bare KeyError that crashed `mcqa run` (even --dry-run)."""
    with pytest.raises(ValueError, match=r"unknown base strategy 'S9'; predefined: \["):
        strategy({"base": "S9"})
