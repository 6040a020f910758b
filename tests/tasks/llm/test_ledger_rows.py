from datetime import UTC, datetime, timedelta

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from tasks.llm.ledger_rows import CALL_ROWS, outcome_indices, outcome_indices_by_sorting

START = datetime(2026, 1, 1, tzinfo=UTC)
ROW = st.tuples(
    st.sampled_from(["a", "b", "c", "d", "e", "f"]), st.sampled_from(["ok", "failed"]), st.integers(0, 3)
)


def rows_of(rows: list[tuple[str, str, int]]) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "key": key,
                "status": status,
                "model": "m",
                "mode": "single",
                "reused_from": None,
                "attempts": 1,
                "prompt_tokens": 1,
                "completion_tokens": 1,
                "input_cost_usd": 0.0,
                "output_cost_usd": 0.0,
                "finished_at": START + timedelta(seconds=second),
            }
            for key, status, second in rows
        ],
        CALL_ROWS,
    )


def test_each_key_has_one_outcome_its_earliest_success_else_its_latest_failure():
    rows = rows_of(
        [
            ("a", "failed", 0),
            ("a", "ok", 2),
            ("a", "ok", 1),
            ("b", "failed", 0),
            ("b", "failed", 3),
            ("c", "ok", 0),
        ]
    )
    assert outcome_indices(rows).tolist() == [2, 5, 4]


@given(st.lists(ROW, max_size=12))
def test_rows_of_distinct_keys_are_their_own_outcomes_as_the_sorting_rule_says(rows):
    """The shortcut for a store of one row a key (a compacted one) is the general rule's special case."""
    table = rows_of(rows)
    assert outcome_indices(table).tolist() == outcome_indices_by_sorting(table).tolist()
