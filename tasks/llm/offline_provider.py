"""The litellm custom provider `threadmed` that serves the offline models registered in tasks/llm/offline.py:
installed by the call layer before it sends an offline model's request."""

import threading
from typing import Any

import litellm
from litellm.llms.custom_llm import CustomLLM, CustomLLMError
from litellm.types.utils import ModelResponse

from tasks.llm.offline import PROVIDER, OfflineBadRequest, UnknownOfflineModel, offline_reply


class OfflineProvider(CustomLLM):
    """litellm handler for `threadmed/<name>`: answers with the registered reply function."""

    def completion(self, *args: Any, **kwargs: Any) -> ModelResponse:
        name, messages = kwargs["model"], kwargs["messages"]
        try:
            text = offline_reply(name)(messages, kwargs["optional_params"])
        except UnknownOfflineModel as exc:
            raise CustomLLMError(status_code=404, message=str(exc)) from exc
        except OfflineBadRequest as exc:
            raise CustomLLMError(status_code=400, message=str(exc)) from exc
        response: ModelResponse = kwargs["model_response"]
        response.choices[0].message.content = text  # type: ignore[union-attr]
        response.choices[0].finish_reason = "stop"
        prompt_words = sum(len(str(m.get("content") or "").split()) for m in messages)
        completion_words = len(text.split())
        response.usage = litellm.Usage(  # type: ignore[attr-defined]
            prompt_tokens=prompt_words,
            completion_tokens=completion_words,
            total_tokens=prompt_words + completion_words,
        )
        return response


_install_lock = threading.Lock()


def install_provider() -> None:
    """Make `threadmed/...` model strings callable through litellm (idempotent, thread-safe)."""
    with _install_lock:
        if not any(item["provider"] == PROVIDER for item in litellm.custom_provider_map):
            litellm.custom_provider_map.append({"provider": PROVIDER, "custom_handler": OfflineProvider()})
