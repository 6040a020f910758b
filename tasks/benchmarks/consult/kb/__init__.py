"""The clinical knowledge base of the consultation benchmark: conditions, AIU types, drugs, interactions."""
