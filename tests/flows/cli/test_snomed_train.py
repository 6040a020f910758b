"""`threadmed snomed oracle-train` in a terminal: what it says before any training starts."""

import json

import pytest

from tasks.benchmarks.snomed.oracle_train.settings import OracleTrainSettings
from tests.flows.cli.terminal import assert_usage_error, threadmed_here
from tests.oracle_fixtures import write_oracle_data


def test_a_data_folder_without_chat_pairs_is_a_usage_error(tmp_path):
    (tmp_path / "data").mkdir()
    assert_usage_error(
        threadmed_here("snomed", "oracle-train", "--data", "data", "--out", "oracle", cwd=tmp_path),
        "Invalid value for '--data': data/chat/train.jsonl holds 0 pairs: data has no manifest.json either, "
        "so it is no oracle data folder: --data takes the --out folder of `threadmed snomed oracle-data`",
    )


def test_resuming_a_run_with_another_rank_is_a_usage_error(tmp_path):
    write_oracle_data(tmp_path / "data")
    (tmp_path / "oracle").mkdir()
    recorded = {"settings": OracleTrainSettings().model_dump(mode="json")}
    (tmp_path / "oracle" / "manifest.json").write_text(json.dumps(recorded))
    (tmp_path / "oracle" / "checkpoints" / "checkpoint-2").mkdir(parents=True)  # it trained 2 steps
    assert_usage_error(
        threadmed_here(
            "snomed", "oracle-train", "--data", "data", "--out", "oracle", "--lora-rank", "4", cwd=tmp_path
        ),
        "Invalid value for '--out': oracle holds a run with other lora_rank; resume it with its settings "
        "(see oracle/manifest.json) or choose another --out",
    )


def test_export_only_without_a_finished_run_is_a_usage_error_before_any_training(tmp_path):
    write_oracle_data(tmp_path / "data")
    assert_usage_error(
        threadmed_here(
            "snomed", "oracle-train", "--data", "data", "--out", "oracle", "--export-only", cwd=tmp_path
        ),
        "Invalid value for '--export-only': nothing to export without training: the folder holds no run; "
        "run the same command without --export-only to train it",
    )
    assert not (tmp_path / "oracle").exists()


def test_a_gguf_without_the_merged_model_is_a_usage_error(tmp_path):
    write_oracle_data(tmp_path / "data")
    (tmp_path / "convert_hf_to_gguf.py").write_text("")
    options = ["--no-export", "--gguf-converter", "convert_hf_to_gguf.py"]
    assert_usage_error(
        threadmed_here("snomed", "oracle-train", "--data", "data", "--out", "oracle", *options, cwd=tmp_path),
        "Invalid value for '--gguf-converter': --gguf-converter converts the merged model: drop --no-export",
    )


def finished_manifest(step: int) -> dict:
    """What train_oracle returns for a run trained to `step` (the fields the command prints)."""
    return {
        "data": {"pairs": {"train": 16, "validation": 8}},
        "eval_loss": {"before": 2.5, "after": 2.25},
        "global_step": step,
        "device": {"device": "cpu"},
        "outputs": {"adapter": "adapter", "merged": "merged"},
    }


@pytest.mark.parametrize(
    ("checkpoint", "plan"),
    [
        (None, "training to step 3"),
        ("checkpoint-2", "training to step 3, resuming from checkpoint-2"),
    ],
)
def test_what_the_run_will_do_is_its_first_line_before_torch_loads(tmp_path, monkeypatch, checkpoint, plan):
    write_oracle_data(tmp_path / "data")
    if checkpoint:
        folder = tmp_path / "oracle" / "checkpoints" / checkpoint
        folder.mkdir(parents=True)
        state = {"global_step": 2, "max_steps": 3, "num_train_epochs": 3.0, "log_history": []}
        (folder / "trainer_state.json").write_text(json.dumps(state))
    said_before_training = []

    def training(*arguments, **options):  # what was printed when the (long) training began
        said_before_training.append(True)
        return finished_manifest(3)

    monkeypatch.setattr("tasks.benchmarks.snomed.oracle_train.train.train_oracle", training)
    result = threadmed_here(
        "snomed", "oracle-train", "--data", "data", "--out", "oracle", "--base", "tiny", "--max-steps", "3",
        cwd=tmp_path,
    )  # fmt: skip
    assert (result.returncode, said_before_training) == (0, [True])
    assert result.stdout.splitlines()[:3] == [
        f"SNOMED patient oracle: LoRA fine-tuning of tiny on data into oracle: {plan}; loading torch and "
        "the base takes a minute or more",
        "Trained.",
        "held-out loss 2.5000 -> 2.2500 after 3 steps on cpu",
    ]
