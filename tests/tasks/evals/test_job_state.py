from collections import Counter

from tasks.evals.job_state import CALLS_FAILED, job_result, rows_of

ROWS = [{"turn": 0}]


def test_rows_of_a_job_whose_calls_all_succeeded_are_returned_as_they_are():
    assert job_result(ROWS, Counter(ok=3)) is ROWS


def test_the_state_says_which_failed_calls_a_re_run_retries():
    """A reply the provider withheld is final (CallLedger.final_failure): a re-run never asks it again."""
    outcomes = [Counter(ok=1, failed=2), Counter(ok=1, failed=2, withheld=2), Counter(failed=2, withheld=1)]
    states = [job_result(ROWS, counted) for counted in outcomes]
    assert [(state.name, rows_of(state)) for state in states] == [(CALLS_FAILED, ROWS)] * 3
    assert [state.message for state in states] == [
        "2 of 3 calls failed (recorded; a re-run retries them)",
        "2 of 3 calls failed (recorded; their replies withheld by the provider: no re-run asks again)",
        "2 of 2 calls failed (recorded; 1 withheld by the provider, never asked again; a re-run retries the "
        "others)",
    ]
