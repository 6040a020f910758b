from prefect.task_runners import ThreadPoolTaskRunner

from tasks.evals.spending import calls_shared_by, capped_run
from tasks.llm.budget import budget_for


def test_a_capped_run_starts_from_what_its_folder_spent_and_an_uncapped_one_has_no_budget(tmp_path):
    with capped_run(tmp_path, 1.0, spent_usd=0.75) as budget:
        assert budget_for(tmp_path / "ledger") is budget
        assert (budget.cap_usd, budget.spent_usd, budget.reserved_usd) == (1.0, 0.75, 0.0)
    assert budget_for(tmp_path / "ledger") is None
    with capped_run(tmp_path, None, spent_usd=0.75) as uncapped:
        assert (uncapped, budget_for(tmp_path / "ledger")) == (None, None)


def test_the_threads_of_the_flow_s_process_share_its_budget_as_they_are(tmp_path):
    with capped_run(tmp_path, 1.0, spent_usd=0.25) as budget, ThreadPoolTaskRunner() as threads:
        with calls_shared_by(threads, tmp_path / "ledger", budget):
            assert budget_for(tmp_path / "ledger") is budget
            assert budget.reserve("a", 0.5)
        assert (budget.spent_usd, budget.reserved_usd) == (0.25, 0.5)
