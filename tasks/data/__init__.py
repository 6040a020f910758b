"""The lake and the warehouse, with one folder per source."""
