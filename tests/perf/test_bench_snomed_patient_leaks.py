"""The prompt-copying patient of the SNOMED leak measurement repeats its prompt's line, in either form."""

from tasks.benchmarks.snomed.patient import NOT_SURE, load_lexicon
from tests.perf.bench_snomed_patient_leaks import copying_reply, form_jobs
from tests.snomed_fixtures import CASES, write_case_set


def test_the_copying_patient_says_the_condition_line_of_its_prompt_verbatim(tmp_path):
    cases_dir = write_case_set(tmp_path / "cases")
    test_cases = [case for case in CASES if case.split == "test"]
    replies = {}
    for form in ("lay", "named"):
        jobs = form_jobs(test_cases, cases_dir, tmp_path / "run", form)
        job = next(j for j in jobs if j.case.case_id == "p1")
        messages = [{"role": "system", "content": job.prompts.patient_system}]
        replies[form] = [
            copying_reply(job, [*messages, {"role": "user", "content": question}], load_lexicon())
            for question in ("Has your blood pressure ever been high?", "Any trouble with your ears?")
        ]
    assert replies == {
        "lay": ["They keep telling me my pressure readings are on the high side.", NOT_SURE],
        "named": ["Essential hypertension (disorder)", NOT_SURE],
    }
