"""Where things are, for tests at any depth under tests/: the repository, the fixtures, and ../shared (the
project's read-only reference data beside the checkout)."""
from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"
SHARED = REPO.parent / "shared"
