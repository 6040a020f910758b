"""Token counts with tiktoken's cl100k_base: the paper's measure, and a fair estimate for any model."""

from collections.abc import Sequence
from functools import lru_cache

import tiktoken

TOKENIZER = "cl100k_base"


@lru_cache(maxsize=1)
def _encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding(TOKENIZER)


def load_tokenizer() -> None:
    """Load the tokenizer (about a second of CPU) ahead of its first count."""
    _encoding()


@lru_cache(maxsize=65536)
def count_tokens(text: str) -> int:
    """Tokens of one text; special-token strings count as ordinary text."""
    return len(_encoding().encode_ordinary(text))


def count_tokens_batch(texts: Sequence[str | None]) -> list[int]:
    """Tokens of each text (None counts 0), encoded on two threads: for whole dataset columns."""
    encoded = _encoding().encode_ordinary_batch([text or "" for text in texts], num_threads=2)
    return [len(tokens) for tokens in encoded]
