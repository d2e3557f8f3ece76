"""The 3PL-residual detector (contamination.fit_residual) against irt's EAP and 3PL called directly."""
import numpy as np
from contamination_runs import exam, letters_records

from mcqa_toolkit import irt
from mcqa_toolkit.contamination.fit_residual import fit_residual


def test_fit_residual_equals_irt_called_directly():
    items = exam(25, seed=2)
    records = letters_records(items, skill=2.0, shuffles=4, seed=1)
    got = fit_residual(records, items).set_index("parallel_id")
    order = sorted(it.parallel_id for it in items)
    u = records.pivot(index="shuffle", columns="parallel_id", values="correct").loc[:, order].to_numpy(float)
    a, b, c = (np.array([items[f"{p}-pt"].irt[j] for p in order]) for j in range(3))
    theta = irt.ability_eap(u, a, b, c, grid=irt.normal_grid(40)[0]).theta
    expected = irt.irf(theta, a, b, c).mean(axis=0)
    np.testing.assert_allclose(got.loc[order, "expected"], expected, atol=1e-9)
    np.testing.assert_allclose(got.loc[order, "fit_residual"], u.mean(axis=0) - expected, atol=1e-9)


def test_items_without_parameters_are_left_out():
    items = exam(10, seed=3)
    records = letters_records(items, shuffles=3)
    bare = items.filter(item_id=set(items.ids[:4]))
    from mcqa_toolkit.items import ItemSet
    mixed = ItemSet([*bare, *[it.with_(irt=None) for it in items if it.item_id not in set(bare.ids)]])
    got = fit_residual(records, mixed)
    assert sorted(got["parallel_id"]) == sorted(it.parallel_id for it in bare)
