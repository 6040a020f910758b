from pathlib import Path

import pytest

from tasks.benchmarks.threadmed.cases import answered_dir, dataset_fingerprint
from tasks.benchmarks.threadmed.plan import OVERLAP_JUDGE_NOTE, build_plan
from tasks.core.preflight import UserError
from tasks.evals.config import EvaluationSettings, ModelSpec
from tests.eval_fixtures import OFFLINE, THREAD_TEXTS, write_dataset


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_dataset(tmp_path_factory.mktemp("build"))


def test_the_plan_pairs_every_thread_model_and_condition_thread_major(dataset, tmp_path):
    plan = build_plan(EvaluationSettings(dataset_dir=dataset, run_dir=tmp_path, config=OFFLINE))
    labels = [job.solve.label for job in plan.jobs]
    assert len(labels) == 3 * 2 * 2
    assert [label.split("/")[-1] for label in labels[:4]] == [labels[0].split("/")[-1]] * 4
    assert [job.score.label for job in plan.jobs] == labels
    retrieval = plan.jobs[0].solve.model
    assert retrieval.params == {
        "temperature": 0,
        "corpus_dir": str(answered_dir(dataset).resolve()),
        "corpus_sha256": dataset_fingerprint(dataset),
    }
    assert plan.ledger_dir == tmp_path / "ledger"


def test_the_retrieval_baseline_s_calls_are_keyed_by_its_corpus_s_content(tmp_path):
    """A dataset rebuilt in place is another corpus: its answers are other calls, not the ledger's."""
    build = write_dataset(tmp_path / "build")
    settings = EvaluationSettings(dataset_dir=build, run_dir=tmp_path / "run", config=OFFLINE)

    def retrieval_keys():
        jobs = [job.solve for job in build_plan(settings).jobs if job.solve.model.name == "retrieval"]
        return {
            job.model.request([{"role": "user", "content": job.thread.questions[0]}]).key() for job in jobs
        }

    before = retrieval_keys()
    rebuilt = {
        **THREAD_TEXTS,
        "extra": ("train", [("Is a sore knee after running normal?", "Usually, yes.")]),
    }
    write_dataset(build, rebuilt)
    assert retrieval_keys().isdisjoint(before)


def test_a_retrieval_corpus_dir_that_is_no_dataset_folder_is_refused(dataset, tmp_path):
    config = OFFLINE.model_copy(
        update={
            "models": [
                ModelSpec(name="retrieval", model="threadmed/retrieval", params={"corpus_dir": "nowhere"})
            ]
        }
    )
    with pytest.raises(UserError, match=r"threadmed/retrieval's corpus_dir nowhere is no dataset folder"):
        build_plan(EvaluationSettings(dataset_dir=dataset, run_dir=tmp_path, config=config))


def test_the_plan_records_prompts_models_as_sent_and_the_offline_judge_note(dataset, tmp_path):
    plan = build_plan(EvaluationSettings(dataset_dir=dataset, run_dir=tmp_path, config=OFFLINE))
    assert plan.prompts.keys() == {"judge_rubric_v1", "judge_reask_v1"}
    assert plan.judge_rubric == "judge_rubric_v1"
    assert all(len(sha256) == 64 for sha256 in plan.prompts.values())
    sent = plan.manifest_facts["sent"]
    assert sent["models"].keys() == {"retrieval", "threadmed/deferral"}
    assert sent["judge"]["threadmed/overlap-judge"] == {
        "model": "threadmed/overlap-judge",
        "api_base": None,
        "params": {"temperature": 0},
    }
    assert plan.manifest_facts["threads"] == 3
    assert plan.notes == [OVERLAP_JUDGE_NOTE]
