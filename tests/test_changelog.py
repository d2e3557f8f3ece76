"""CHANGELOG.md names the commits it describes: every entry (a top-level "- " bullet under a "### " heading) outside
[Unreleased] names at least one commit of HEAD's history by its short sha, names no commit that is not there, and
sits under the section of the main state it landed in ("## [main at <sha>] - <date>": a named commit is in that
state and not in the next older section's; the date is the state's commit date). Checked against git; skipped
where there is no history (not a git checkout, or a shallow clone)."""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

import pytest
from paths import REPO

SECTION = re.compile(r"^## \[(?P<name>[^\]]+)\](?: - (?P<date>\S+))?\s*$")
STATE = re.compile(r"^main at (?P<sha>[0-9a-f]{7,40})$")
HEX = re.compile(r"(?<![0-9A-Za-z_])[0-9a-f]{7,40}(?![0-9A-Za-z_])")


@dataclass(frozen=True)
class History:
    """What the check needs of git: every commit of HEAD's history (full hashes), the commits of each section's
    state, and each state's commit date (YYYY-MM-DD)."""

    commits: frozenset[str]
    states: dict[str, frozenset[str]]
    dates: dict[str, str]


def entries(text: str) -> list[tuple[str, str]]:
    """(section name, entry text) for each top-level "- " bullet under a "### " heading, its indented lines
    joined."""
    out: list[tuple[str, str]] = []
    section, in_kind, current = "", False, None
    for line in text.splitlines():
        if line.startswith("## "):
            m = SECTION.match(line)
            section, in_kind, current = (m.group("name") if m else line[3:]), False, None
        elif line.startswith("### "):
            in_kind, current = True, None
        elif in_kind and line.startswith("- "):
            out.append((section, line[2:]))
            current = len(out) - 1
        elif current is not None and line.startswith("  ") and line.strip():
            out[current] = (out[current][0], out[current][1] + " " + line.strip())
        elif line.strip():
            current = None
    return out


def sections(text: str) -> list[tuple[str, str | None]]:
    """(name, date) of each "## [...]" heading, newest first as written."""
    return [(m.group("name"), m.group("date")) for m in map(SECTION.match, text.splitlines()) if m]


def _full(sha: str, commits: frozenset[str]) -> str | None:
    """The one commit of `commits` whose hash starts with `sha`, None when none or several do."""
    found = [c for c in commits if c.startswith(sha)]
    return found[0] if len(found) == 1 else None


def problems(text: str, history: History) -> list[str]:
    """Where the changelog breaks the rule, one line each; [] when it keeps it."""
    out: list[str] = []
    states = [(name, date) for name, date in sections(text) if name != "Unreleased"]
    state_of: dict[str, tuple[str, str | None]] = {}  # section name -> (its state's commit, the next older's)
    for i, (name, date) in enumerate(states):
        m = STATE.match(name)
        full = _full(m.group("sha"), history.commits) if m else None
        if full is None:
            out.append(f"section [{name}]: not 'main at <sha>' with a commit of HEAD's history")
            continue
        if date != history.dates.get(full):
            out.append(f"section [{name}]: dated {date}, its commit {history.dates.get(full)}")
        older = STATE.match(states[i + 1][0]) if i + 1 < len(states) else None
        state_of[name] = (full, _full(older.group("sha"), history.commits) if older else None)
    for section, entry in entries(text):
        if section == "Unreleased":
            continue
        named, unknown = [], []
        for token in HEX.findall(entry):
            full = _full(token, history.commits)
            if full:
                named.append(full)
            elif re.search(r"\d", token) and re.search(r"[a-f]", token):  # a sha, not a number or a word
                unknown.append(token)
        where = f"[{section}] {entry[:70]!r}"
        if unknown:
            out.append(f"{where}: {', '.join(unknown)} is no commit of HEAD's history")
        if not named:
            out.append(f"{where}: names no commit (a short sha of the commit or merge that landed it)")
        elif section in state_of:
            state, older = state_of[section]
            inside = history.states[state] - (history.states[older] if older else frozenset())
            if not any(c in inside for c in named):
                out.append(f"{where}: none of its commits landed in this section's state (after the next older "
                           "section's)")
    return out


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout


def _history(text: str) -> History:
    """HEAD's history as git gives it; pytest.skip where there is none to give."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the changelog's commits cannot be checked")
    inside = subprocess.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=REPO, capture_output=True, text=True)
    if inside.returncode or inside.stdout.strip() != "true":
        pytest.skip("not a git checkout: the changelog's commits cannot be checked")
    if _git("rev-parse", "--is-shallow-repository").strip() == "true":
        pytest.skip("a shallow clone: the changelog's commits are not all here (clone with full history)")
    commits = frozenset(_git("rev-list", "HEAD").split())
    states: dict[str, frozenset[str]] = {}
    dates: dict[str, str] = {}
    for name, _ in sections(text):
        m = STATE.match(name)
        full = _full(m.group("sha"), commits) if m else None
        if full:
            states[full] = frozenset(_git("rev-list", full).split())
            dates[full] = _git("log", "-1", "--format=%cs", full).strip()
    return History(commits, states, dates)


def test_every_entry_names_a_commit_of_main_under_the_state_it_landed_in():
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert len(entries(text)) > 20  # the parser finds the entries at all
    assert problems(text, _history(text)) == []


OLD, MID, NEW, OTHER = "a1" * 20, "b2" * 20, "c3" * 20, "d4" * 20  # a made-up history: OLD <- MID <- NEW
HISTORY = History(frozenset({OLD, MID, NEW}),
                  {NEW: frozenset({OLD, MID, NEW}), MID: frozenset({OLD, MID})},
                  {NEW: "2026-11-27", MID: "2026-11-25"})


def _changelog(entry_new: str, entry_mid: str = f"- Something changed ({MID[:7]}).") -> str:
    return "\n".join(["# Changelog", "", "## [Unreleased]", "", "### Added", "- Not landed yet, no sha.", "",
                      f"## [main at {NEW[:7]}] - 2026-11-27", "", "### Changed", entry_new,
                      "  and its second line.", "", f"## [main at {MID[:7]}] - 2026-11-25", "", "### Changed",
                      entry_mid, ""])


def test_the_check_passes_a_kept_changelog_and_names_each_broken_entry():
    assert entries(_changelog(f"- A change ({NEW[:7]})")) == [
        ("Unreleased", "Not landed yet, no sha."), (f"main at {NEW[:7]}", f"A change ({NEW[:7]}) and its second line."),
        (f"main at {MID[:7]}", f"Something changed ({MID[:7]}).")]
    assert problems(_changelog(f"- A change ({NEW[:7]})"), HISTORY) == []
    assert problems(_changelog(f"- A change ({OLD[:7]}, landed {NEW})"), HISTORY) == []  # one of them landed here
    made_up = problems(_changelog(f"- A change ({OTHER[:7]})"), HISTORY)
    assert len(made_up) == 2 and f"{OTHER[:7]} is no commit" in made_up[0] and "names no commit" in made_up[1]
    assert problems(_changelog(f"- A change ({NEW[:7]}, {OTHER[:9]})"), HISTORY)[0].endswith(
        f"{OTHER[:9]} is no commit of HEAD's history")
    assert "names no commit" in problems(_changelog("- A change with no sha (issue 50)."), HISTORY)[0]
    assert "none of its commits landed" in problems(_changelog(f"- Old news ({MID[:7]})"), HISTORY)[0]
    assert "none of its commits landed" in problems(_changelog(f"- A ({NEW[:7]})", f"- Too new ({NEW[:7]})"),
                                                    HISTORY)[0]
    # a number or a word made of hex letters is not a sha; 2026-11-24 is a date
    assert problems(_changelog(f"- 1234567 items, defaced ({NEW[:7]})"), HISTORY) == []
    misdated = _changelog(f"- A change ({NEW[:7]})").replace("] - 2026-11-25", "] - 2026-11-24")
    assert problems(misdated, HISTORY) == [f"section [main at {MID[:7]}]: dated 2026-11-24, its commit 2026-11-25"]
