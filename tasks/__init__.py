"""The work of the pipeline: pure functions plus thin Prefect tasks.

Importing this package sets offline-safe defaults for two libraries that otherwise reach the internet:
litellm downloads its price map at import, and tiktoken downloads its encodings on first use. Both are
served from the files litellm ships. A user's own environment always wins (setdefault).
"""

import importlib.util
import os
from pathlib import Path


def _litellm_tokenizer_dir() -> str | None:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    return str(Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers")


os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
if (_tokenizers := _litellm_tokenizer_dir()) is not None:
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", _tokenizers)
