"""The oracle fine-tuning's pure parts: pairs, settings a resume may change, the loss curve, inputs (resuming
and exporting: test_oracle_train_resume.py)."""

import json

import pytest

from tasks.benchmarks.snomed.oracle_train.base import gguf_parts
from tasks.benchmarks.snomed.oracle_train.curve import held_out_loss_at, loss_rows, write_loss_csv
from tasks.benchmarks.snomed.oracle_train.data import chat_split_files, load_pairs, prompt_completion
from tasks.benchmarks.snomed.oracle_train.export import convert_to_gguf
from tasks.benchmarks.snomed.oracle_train.settings import OracleTrainSettings, changed_settings
from tasks.benchmarks.snomed.oracle_train.train import check_pairs_left
from tasks.core.preflight import UserError
from tests.oracle_fixtures import write_oracle_data

SYSTEM = {"role": "system", "content": "You are a patient."}
QUESTION = {"role": "user", "content": "Any fever?"}
ANSWER = {"role": "assistant", "content": "I'm not sure."}


def test_a_chat_pair_becomes_a_prompt_and_the_answer_alone_as_completion():
    assert prompt_completion([SYSTEM, QUESTION, ANSWER]) == {
        "prompt": [SYSTEM, QUESTION],
        "completion": [ANSWER],
    }


@pytest.mark.parametrize("messages", [[SYSTEM, QUESTION], [SYSTEM, ANSWER, QUESTION, ANSWER]])
def test_a_pair_that_does_not_end_in_one_answer_is_refused(messages):
    with pytest.raises(ValueError, match="a pair ends with one assistant message"):
        prompt_completion(messages)


def test_the_paper_settings_are_the_defaults():
    settings = OracleTrainSettings()
    assert (settings.base, settings.max_length, settings.batch_size) == ("BioMistral/BioMistral-7B", 512, 1)
    assert settings.target_modules == ("q_proj", "k_proj", "v_proj", "o_proj")


def test_a_resume_may_train_longer_but_not_differently():
    recorded = OracleTrainSettings(max_steps=2).model_dump(mode="json")
    assert changed_settings(recorded, OracleTrainSettings(max_steps=4, epochs=1)) == []
    assert changed_settings(recorded, OracleTrainSettings(lora_rank=8, learning_rate=1e-3)) == [
        "learning_rate",
        "lora_rank",
    ]


def test_the_loss_curve_starts_at_the_loss_before_training_and_keeps_one_loss_per_step(tmp_path):
    log_history = [
        {"loss": 2.5, "step": 1, "epoch": 0.1, "learning_rate": 1e-3},
        {"eval_loss": 2.2, "step": 1, "epoch": 0.1},
        {"train_runtime": 9.0, "step": 1, "epoch": 0.1},
        {"eval_loss": 2.0, "step": 1, "epoch": 0.1},  # the evaluation after training, at the last step
    ]
    rows = loss_rows(log_history, loss_before=3.0)
    assert rows == [
        {"step": 0, "epoch": 0.0, "split": "validation", "loss": 3.0},
        {"step": 1, "epoch": 0.1, "split": "train", "loss": 2.5},
        {"step": 1, "epoch": 0.1, "split": "validation", "loss": 2.0},
    ]
    assert write_loss_csv(rows, tmp_path / "curve.csv").read_text().splitlines() == [
        "step,epoch,split,loss",
        "0,0.0,validation,3.0",
        "1,0.1,train,2.5",
        "1,0.1,validation,2.0",
    ]


def test_the_held_out_loss_after_training_is_the_one_logged_at_the_last_step_if_any():
    log_history = [
        {"eval_loss": 3.0, "step": 0, "epoch": 0.0},  # before training
        {"loss": 2.5, "step": 3, "epoch": 0.3, "learning_rate": 1e-3},
        {"eval_loss": 2.2, "step": 3, "epoch": 0.3},
        {"train_runtime": 9.0, "step": 4, "epoch": 0.4},
    ]
    assert [held_out_loss_at(log_history, step) for step in (0, 3, 4, 5)] == [3.0, 2.2, None, None]
    assert held_out_loss_at([*log_history, {"eval_loss": 2.1, "step": 3}], 3) == 2.1  # the last one logged


def test_a_folder_without_validation_pairs_nor_a_manifest_is_no_oracle_data_folder(tmp_path):
    write_oracle_data(tmp_path)
    (tmp_path / "chat" / "validation.jsonl").write_text("")
    with pytest.raises(UserError) as refused:
        chat_split_files(tmp_path)
    assert str(refused.value) == (
        f"{tmp_path / 'chat' / 'validation.jsonl'} holds 0 pairs: {tmp_path} has no manifest.json either, so "
        "it is no oracle data folder: --data takes the --out folder of `threadmed snomed oracle-data`"
    )


@pytest.mark.parametrize(
    ("manifest", "reason"),
    [
        (
            {"counts": {"kept": {"validation": {"positive": 0, "negative": 0}},
                        "cases": {"train": 2, "validation": 0, "test": 0}},
             "split": {"train": 0.8, "validation": 0.1, "test": 0.1}},
            "the data folder's split by patient (train 80%, validation 10%, test 10%) gave validation no "
            "patient of its 2; rebuild it with `threadmed snomed oracle-data` from 3 or more patients (a "
            "higher --limit, or a larger case set)",
        ),
        (
            {"counts": {"kept": {"validation": {"positive": 3, "negative": 1}},
                        "cases": {"train": 8, "validation": 1, "test": 1}},
             "split": {"train": 0.8, "validation": 0.1, "test": 0.1}},
            "its manifest.json counts 4 kept, so the folder is unfinished: re-run `threadmed snomed "
            "oracle-data` into it",
        ),
        ({"counts": {}}, "its manifest.json cannot be read (KeyError: 'kept'); rebuild the folder with "
                         "`threadmed snomed oracle-data`"),
    ],
)  # fmt: skip
def test_a_data_folder_without_validation_pairs_says_why_from_its_manifest(tmp_path, manifest, reason):
    write_oracle_data(tmp_path)
    (tmp_path / "chat" / "validation.jsonl").unlink()
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(UserError) as refused:
        chat_split_files(tmp_path)
    assert (str(refused.value), refused.value.option) == (
        f"{tmp_path / 'chat' / 'validation.jsonl'} holds 0 pairs: {reason}",
        "--data",
    )


def test_a_base_is_a_gguf_file_only_by_its_suffix_and_must_exist(tmp_path):
    assert gguf_parts("BioMistral/BioMistral-7B") is None
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    assert gguf_parts(str(tmp_path / "m.gguf")) == (str(tmp_path), "m.gguf")
    with pytest.raises(UserError, match="no such GGUF file"):
        gguf_parts(str(tmp_path / "missing.gguf"))


def test_datasets_loads_the_chat_pairs_as_prompt_completion_rows(tmp_path):
    pytest.importorskip("datasets", reason="the oracle extra is not installed: pip install -e '.[oracle]'")
    pairs = load_pairs(chat_split_files(write_oracle_data(tmp_path)))
    assert {split: (len(rows), rows.column_names) for split, rows in pairs.items()} == {
        "train": (16, ["prompt", "completion"]),
        "validation": (8, ["prompt", "completion"]),
    }
    assert pairs["validation"][2]["completion"] == [
        {"role": "assistant", "content": "I'm not sure, I haven't noticed anything like that."}
    ]


def test_a_failed_gguf_conversion_quotes_the_converter_and_says_how_to_rerun_it(tmp_path):
    converter = tmp_path / "convert_hf_to_gguf.py"
    converter.write_text("import sys\nprint('loading')\nsys.exit(\"No module named 'sentencepiece'\")\n")
    merged, outfile = tmp_path / "merged", tmp_path / "oracle.gguf"
    with pytest.raises(UserError) as refused:
        convert_to_gguf(merged, converter, outfile)
    assert str(refused.value) == (
        f"{converter} exited 1 (No module named 'sentencepiece'); the merged model is in {merged}: "
        f"convert it with `python {converter} {merged} --outfile {outfile} --outtype f16`"
    )


def test_a_max_length_that_cuts_off_every_answer_of_a_split_is_refused_naming_it():
    check_pairs_left({"train": 130, "validation": 1}, {"train": 137, "validation": 18}, max_length=256)
    with pytest.raises(UserError) as refused:
        check_pairs_left({"train": 130, "validation": 0}, {"train": 137, "validation": 18}, max_length=256)
    assert (str(refused.value), refused.value.option) == (
        "--max-length 256 cuts off the answer of every validation pair (validation: 18): its prompt, which "
        "holds the patient's record, fills the tokens; raise --max-length",
        "--max-length",
    )
