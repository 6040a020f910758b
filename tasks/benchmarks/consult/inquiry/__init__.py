"""Inquiry logic of the consultation benchmark: question templates, and the order real doctors ask them in."""
