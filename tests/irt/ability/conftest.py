"""The ability estimator tests allow no warnings."""
import warnings

import pytest


@pytest.fixture(autouse=True)
def _no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield
