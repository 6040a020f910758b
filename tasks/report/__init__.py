"""Report pieces every benchmark shares."""
