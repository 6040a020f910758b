"""The Reddit source: the Pushshift reader, record normalisation and the streaming ingest."""
