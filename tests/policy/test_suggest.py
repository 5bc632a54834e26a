"""Did-you-mean hints: a near miss is found as difflib finds it, without difflib when nothing
can be close (issue 31 item 4: a tool class adding one public name imported difflib for every
command)."""

from __future__ import annotations

import difflib
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from policy.suggest import _CUTOFF, closest_name

_NAMES = st.text(alphabet="abcdeST_-.xyz", min_size=0, max_size=14)


def _by_difflib(wanted: str, known: list[str]) -> str | None:
    """What `closest_name` answers when no earlier rule (case, underscores, whole word) does:
    difflib's closest spelling over the folded names."""
    names = [n for n in dict.fromkeys(known) if n != wanted]
    by_folded = {n.casefold(): n for n in names}
    found = difflib.get_close_matches(
        wanted.strip().casefold(), list(by_folded), n=1, cutoff=_CUTOFF
    )
    return by_folded[found[0]] if found else None


@settings(max_examples=400, deadline=None)
@given(_NAMES, st.lists(_NAMES, max_size=8))
def test_the_closest_name_is_difflibs_when_no_earlier_rule_answers(
    wanted: str, known: list[str]
) -> None:
    folded = wanted.strip().casefold()
    names = [n for n in dict.fromkeys(known) if n != wanted]
    earlier = any(
        n.casefold() == folded
        or n.casefold().replace("_", "").replace("-", "")
        == folded.replace("_", "").replace("-", "")
        or folded in n.casefold().replace("-", "_").split("_")
        for n in names
    )
    if not earlier:
        assert closest_name(wanted, known) == _by_difflib(wanted, known)


def test_a_near_miss_is_still_found_and_a_far_one_is_not() -> None:
    assert closest_name("defaultSafeSerach", ["defaultSafeSearch", "maxResults"]) == (
        "defaultSafeSearch"
    )
    assert closest_name("offered_sources", ["definition", "display_name"]) is None


def test_a_name_nothing_is_close_to_imports_no_difflib() -> None:
    probe = (
        "import sys\n"
        "from policy.suggest import closest_name\n"
        "print(closest_name('offered_sources', ['definition', 'display_name', 'is_available']))\n"
        "print('difflib' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["None", "False"]
