"""Write realistic Pushshift-format dumps and the generator's truth tables (demos, tests, benchmarks)."""

from prefect import flow

from tasks.synth.generator import write_synthetic_dumps


@flow(name="synthesize-dumps")
def synthesize_dumps(out_dir: str, posts: int = 3000, seed: int = 0, layout: str = "subreddit") -> dict:
    """Generate `posts` subreddit posts with their comments into out_dir; return the files and counts."""
    return write_synthetic_dumps(out_dir, posts, seed, layout)
