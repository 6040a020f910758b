"""The call layer: request keys, the call with retries and limits, the ledger, offline models, prompts."""
