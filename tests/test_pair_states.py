"""A judge capability instead of its name (issue 32): the judge says what it is (`Judge.triage_only`),
and the one function for stored names (`judge_names.triage_only_judge`) agrees with it."""

from __future__ import annotations

import pytest

from monitor.config import Settings
from monitor.judge.factory import PROVIDERS, make_judge
from monitor.judge_names import shown_judge, stored_judge_name, triage_only_judge


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_judge_says_whether_it_is_triage_only_and_its_stored_name_says_the_same(provider: str) -> None:
    judge = make_judge(Settings(), provider, connect=False)
    assert judge.triage_only is (provider == "embedded")
    assert triage_only_judge(judge.name) is judge.triage_only is triage_only_judge(provider)
    assert judge.name == stored_judge_name(provider) and shown_judge(judge.name) == provider
