"""One folder per benchmark; `registry.py` lists them."""
