from tasks.core.tokens import count_tokens, count_tokens_batch


def test_one_text_and_a_batch_count_alike_and_none_counts_nothing():
    texts = ["How long does a sprained ankle take to heal?", "", "<|endoftext|> is just text here"]
    assert count_tokens_batch([*texts, None]) == [*(count_tokens(t) for t in texts), 0]
    assert count_tokens("hello world") == 2


def test_special_token_strings_are_ordinary_text():
    assert count_tokens("<|endoftext|>") > 1
