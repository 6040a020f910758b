"""litellm, imported when a call, a price or a batch first needs it.

Importing litellm takes 2.5-3 s of CPU (its provider modules and the OpenAI SDK's types). Reports, exports,
comparisons, leaderboards, `prefect deploy` and the flow runs that build cases or reports import the call
layer's modules for their records and counts but never reach a provider, so they do not pay for it.
The modules that subclass or wrap litellm's own classes (direct.py, offline_provider.py) are imported by
the call layer where it first sends a request.
"""

import functools
from types import ModuleType


@functools.cache
def litellm_sdk() -> ModuleType:
    """The litellm module, imported and configured once per process."""
    import litellm

    # litellm prints a "Give Feedback / Get Help" banner on every provider error; our records carry the error.
    litellm.suppress_debug_info = True
    return litellm
