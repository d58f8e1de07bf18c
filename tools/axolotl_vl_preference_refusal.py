"""What axolotl 0.19.0 does with image rows for DPO and KTO: it refuses them before training. Recorded from its own code.

axolotl prepares preference datasets with the tokenizer alone (``load_preference_datasets`` loads no processor) and
hands the trainer the tokenizer as ``processing_class`` (``core/builders/rl.py``). This tool runs that path on one
image row per task: axolotl's own dataset transform (DPO ``chat_template.default``, KTO ``chatml.argilla``) mapped
over the row as ``_map_dataset`` maps it (the transform with the tokenizer; ``_map_dataset`` itself is not imported:
its module pulls in axolotl's telemetry, whose packages are not installed), then TRL 1.9.0's trainer (the version
axolotl 0.19.0 pins) built with a tiny random Qwen2 model and the tokenizer. ``AxolotlDPOTrainer`` is a subclass that
calls ``DPOTrainer.__init__`` first (its module needs numba, not installed), so the base class is built. It records
the columns the transform leaves and what the trainer raised, with the versions, in
fixtures/axolotl-0.19.0-vision/preference-refusal.json.

    python -m venv --system-site-packages /work/venvs/trl-1.9
    /work/venvs/trl-1.9/bin/pip install --no-deps trl==1.9.0 axolotl==0.19.0 transformers==5.16.1
    /work/venvs/trl-1.9/bin/pip install httpx addict "huggingface-hub>=1.5,<2"
    /work/venvs/trl-1.9/bin/python tools/axolotl_vl_preference_refusal.py
"""

from __future__ import annotations

import inspect
import json
import tempfile
import warnings
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "fixtures" / "processors" / "qwen2-vl"
OUT = ROOT / "fixtures" / "axolotl-0.19.0-vision" / "preference-refusal.json"
ROWS = {
    "dpo": ("chat_template.default", {"images": ["images/red_ball.png"],
                                      "messages": [{"role": "user", "content": "What colour is the ball?"}],
                                      "chosen": {"role": "assistant", "content": "Red."},
                                      "rejected": {"role": "assistant", "content": "Blue."}}),
    "kto": ("chatml.argilla", {"images": ["images/red_ball.png"], "instruction": "What colour is the ball?",
                               "completion": "Red.", "label": True}),
}


def prepared(task: str, tokenizer: Any) -> Any:
    """The row as axolotl's transform for the task leaves it (a datasets.Dataset)."""
    from axolotl.prompt_strategies.dpo import load as load_dpo
    from axolotl.prompt_strategies.kto import load as load_kto
    from axolotl.utils.dict import DictDefault
    from datasets import Dataset

    kind, row = ROWS[task]
    cfg = DictDefault({"datasets": [{"path": "rows.jsonl", "type": kind}], "rl": task, "dataset_num_proc": 1})
    loaded = (load_dpo if task == "dpo" else load_kto)(kind, cfg, dataset_idx=0)
    transform, map_kwargs = loaded if isinstance(loaded, tuple) else (loaded, {})
    if "tokenizer" in inspect.signature(transform).parameters:  # as _map_dataset hands it the tokenizer
        transform = partial(transform, tokenizer=tokenizer)
    return Dataset.from_list([row, row]).map(transform, **map_kwargs)


def trainer_error(task: str, dataset: Any, tokenizer: Any) -> str:
    from transformers import Qwen2Config, Qwen2ForCausalLM
    from trl import DPOConfig, DPOTrainer, KTOConfig, KTOTrainer

    model = Qwen2ForCausalLM(Qwen2Config(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=1, intermediate_size=32))
    config, trainer = (DPOConfig, DPOTrainer) if task == "dpo" else (KTOConfig, KTOTrainer)
    with tempfile.TemporaryDirectory() as out:
        args = config(output_dir=out, report_to=[], use_cpu=True, bf16=False, per_device_train_batch_size=2)
        try:
            trainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer)
        except Exception as exc:  # noqa: BLE001 - what the trainer raises is the record
            return f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    return ""


def main() -> None:
    warnings.simplefilter("ignore")
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(FOLDER), local_files_only=True)
    record: dict[str, Any] = {"versions": {p: metadata.version(p) for p in ("axolotl", "trl", "transformers", "datasets")},
                              "tasks": {}}
    for task, (kind, _) in ROWS.items():
        dataset = prepared(task, tokenizer)
        record["tasks"][task] = {"type": kind, "columns": sorted(dataset.column_names),
                                 "error": trainer_error(task, dataset, tokenizer)}
    OUT.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
