"""ThReadMed-QA: multi-turn r/AskDocs threads answered by a model and graded by a judge."""
