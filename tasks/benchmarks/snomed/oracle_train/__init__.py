"""LoRA fine-tuning of the SNOMED patient oracle (the paper's BioMistral-7B oracle) on the chat JSONL that
`threadmed snomed oracle-data` writes, and its export for serving. Needs the `oracle` extra."""
