"""Which provider a model string is routed to, and whether it has an OpenAI-style batch API.

Small on purpose: the run config checks batch roles with it, and every command that reads a config imports
that; litellm (seconds to import, sdk.py) is imported only when a provider is asked for, i.e. a role is in
batch mode.
"""

from tasks.llm.sdk import litellm_sdk

# Providers whose litellm route takes OpenAI's batch JSONL as it is.
BATCH_PROVIDERS = ("openai", "azure")


def provider_of(model: str, api_base: str | None) -> str:
    """The litellm provider `model` is routed to (its prefix when litellm does not know it)."""
    litellm = litellm_sdk()
    try:
        return litellm.get_llm_provider(model=model, api_base=api_base)[1]
    except litellm.BadRequestError:
        return model.split("/", 1)[0]


def batch_capable(model: str, api_base: str | None) -> bool:
    """Whether `model` is reached through a provider with an OpenAI-style batch API."""
    return provider_of(model, api_base) in BATCH_PROVIDERS


def check_batch_capable(model: str, api_base: str | None) -> None:
    """Raise ValueError when `model` is reached through a provider without an OpenAI-style batch API."""
    if not batch_capable(model, api_base):
        provider = provider_of(model, api_base)
        raise ValueError(
            f"{model}: batch mode needs an OpenAI-style batch API (providers {', '.join(BATCH_PROVIDERS)}, "
            f"or any OpenAI-compatible endpoint as openai/<model> with api_base); {provider} has none here"
        )
