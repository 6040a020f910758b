"""The call layer, shared by every benchmark and importing none: request and call key (request.py), the
call with retries and limits (call.py, errors.py, limits.py), the ledger, offline models, prompt files.
See README.md in this folder."""
