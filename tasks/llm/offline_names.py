"""The names of offline models (tasks/llm/offline.py), without litellm: a config tells an offline model from
a real one by its name, and every command reading a config would otherwise pay litellm's seconds of import.
"""

# The provider prefix predates other benchmarks; it stays, so that model strings in configs and the
# call keys of recorded runs stay valid.
PROVIDER = "threadmed"


def is_offline(model: str) -> bool:
    """Whether `model` is an offline model's string (registered or not: an unknown name fails when called)."""
    return model.startswith(f"{PROVIDER}/")
