"""core/wait.wait_until: the one poll-until-deadline helper (structure, not wall times)."""

from secperf.core.wait import wait_until


def test_returns_the_first_true_value_and_stops_polling():
    calls = []

    def cond():
        calls.append(1)
        return "ready" if len(calls) == 3 else None

    assert wait_until(cond, timeout_s=30, interval_s=0) == "ready"
    assert len(calls) == 3


def test_condition_runs_once_even_with_no_time_left():
    calls = []
    assert wait_until(lambda: calls.append(1), timeout_s=0) is None
    assert calls == [1]


def test_give_up_ends_the_wait_before_the_deadline():
    polls = []
    assert wait_until(lambda: polls.append(1), timeout_s=3600, interval_s=0, give_up=lambda: len(polls) >= 2) is None
    assert len(polls) == 2


def test_timeout_returns_none_after_polling_more_than_once():
    polls = []
    assert wait_until(lambda: polls.append(1), timeout_s=0.05, interval_s=0.001) is None
    assert len(polls) >= 2
