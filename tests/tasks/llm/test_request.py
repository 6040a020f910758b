from hypothesis import given
from hypothesis import strategies as st

from tasks.llm.request import ChatRequest, assumed_reply_tokens, canonical_params

MESSAGES = ({"role": "user", "content": "My ankle is swollen. X-ray?"},)


def test_call_key_covers_what_changes_the_reply_and_nothing_else():
    base = ChatRequest(model="openai/m1", messages=MESSAGES, params={"temperature": 0, "max_tokens": 9})
    same = ChatRequest(model="openai/m1", messages=MESSAGES, params={"max_tokens": 9, "temperature": 0})
    assert base.key() == same.key()
    changed = [
        base.model_copy(update={"model": "openai/m2"}),
        base.model_copy(update={"messages": (*MESSAGES, {"role": "user", "content": "?"})}),
        base.model_copy(update={"params": {"temperature": 1, "max_tokens": 9}}),
        base.model_copy(update={"api_base": "http://127.0.0.1:1/v1"}),
        base.model_copy(update={"prompt_version": "judge_rubric_v2"}),
    ]
    assert len({base.key(), *(c.key() for c in changed)}) == 6


# Keys recorded before `scope` and `epoch` existed (computed on the commit that added them, before the
# change): old run folders resume only while these stay the same.
RECORDED_KEYS = {
    "72e0351bb86b114eceb720073ca1a7e4c49ef288022ddb8545caae543ed6f0cd": ChatRequest(
        model="openai/gpt-4o",
        messages=(
            {"role": "system", "content": "You grade."},
            {"role": "user", "content": "My ankle is swollen. X-ray?"},
        ),
        params={"temperature": 0, "max_tokens": 512},
        prompt_version="judge_rubric_v1",
    ),
    "f2f74bff82991f87903642fad84a137cbef0a9cc32ad1642e44ce297f87ffb28": ChatRequest(
        model="threadmed/deferral", messages=({"role": "user", "content": "hi"},)
    ),
}


def test_keys_recorded_before_scope_and_epoch_existed_are_unchanged():
    for key, request in RECORDED_KEYS.items():
        assert request.key() == key
        assert request.model_copy(update={"scope": None, "epoch": 0}).key() == key


def test_a_whole_number_float_param_is_the_integer_it_equals_in_the_key():
    """`temperature: 0.0` in a YAML config and the default `0` are one call, paid once; 0.5 is another."""
    schema = {"type": "json_schema", "json_schema": {"schema": {"minimum": 1.0, "enum": [2.0, "x"]}}}
    floats = ChatRequest(
        model="openai/m1",
        messages=MESSAGES,
        params={"temperature": 0.0, "max_tokens": 9.0, "response_format": schema},
    )
    ints = floats.model_copy(update={"params": canonical_params(floats.params)})
    assert ints.params == {
        "temperature": 0,
        "max_tokens": 9,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"schema": {"minimum": 1, "enum": [2, "x"]}},
        },
    }
    assert [type(v) for v in (ints.params["temperature"], ints.params["max_tokens"])] == [int, int]
    assert floats.key() == ints.key()
    assert floats.model_copy(update={"params": {"temperature": 0.5}}).key() != ints.key()


# A key recorded before whole-number floats were read as integers (computed on the commit before): its
# call is found under it, so a run folder of such calls resumes without paying them again.
LEGACY_KEY = (
    "0fcda247b18183f09bc5fc0ad48f9badc295cf0c3b3b6be0ee63dc32ad49d6c4",
    ChatRequest(model="openai/gpt-4o", messages=MESSAGES, params={"temperature": 0.0, "max_tokens": 512}),
)


def test_the_legacy_key_is_the_key_before_whole_number_floats_were_read_as_integers():
    legacy, request = LEGACY_KEY
    assert request.legacy_key() == legacy
    assert request.key() == "5021272329359d998690aa12537bd3263ee7b28b38f23c1ff3c502797ae610d0"
    # A request of integers (every default config's) never had another key.
    assert request.model_copy(update={"params": {"temperature": 0, "max_tokens": 512}}).legacy_key() is None


@given(
    st.dictionaries(
        st.sampled_from(["temperature", "top_p", "max_tokens", "seed"]), st.integers(-(2**53), 2**53)
    )
)
def test_a_param_written_as_a_float_or_an_integer_is_the_same_call(params):
    as_ints = ChatRequest(model="openai/m1", messages=MESSAGES, params=params)
    as_floats = as_ints.model_copy(update={"params": {name: float(value) for name, value in params.items()}})
    assert as_floats.key() == as_ints.key()
    assert as_ints.legacy_key() is None
    assert (as_floats.legacy_key() is None) == (not params)


def test_scope_and_epoch_are_in_the_key_when_set():
    base = ChatRequest(model="openai/m1", messages=MESSAGES, params={"temperature": 1})
    keys = {
        base.key(),
        base.model_copy(update={"scope": "snomed/patient"}).key(),
        base.model_copy(update={"scope": "snomed/clinician"}).key(),
        base.model_copy(update={"epoch": 1}).key(),
        base.model_copy(update={"epoch": 2}).key(),
        base.model_copy(update={"scope": "snomed/patient", "epoch": 1}).key(),
    }
    assert len(keys) == 6


def test_a_request_asks_for_json_through_its_response_format():
    def asks(params):
        return ChatRequest(model="openai/m1", messages=MESSAGES, params=params).asks_for_json()

    assert asks({"response_format": {"type": "json_object"}})
    assert asks({"response_format": {"type": "json_schema", "json_schema": {"name": "verdict"}}})
    assert not asks({"response_format": {"type": "text"}})
    assert not asks({"temperature": 0})


@given(
    estimated=st.integers(min_value=0, max_value=10**6),
    max_tokens=st.one_of(st.none(), st.booleans(), st.integers(min_value=1, max_value=10**6), st.text()),
)
def test_the_reply_an_estimate_assumes_is_the_role_s_estimate_never_past_the_max_tokens_sent(
    estimated, max_tokens
):
    params = {} if max_tokens is None else {"max_tokens": max_tokens}
    capped = isinstance(max_tokens, int) and not isinstance(max_tokens, bool)
    assert assumed_reply_tokens(estimated, params) == (min(estimated, max_tokens) if capped else estimated)


def test_the_reply_an_estimate_assumes_in_examples():
    examples = [
        (400, {}, 400),
        (400, {"max_tokens": 64}, 64),
        (30, {"max_tokens": 64}, 30),
        (400, {"n": 1}, 400),
    ]
    assert [assumed_reply_tokens(estimated, params) for estimated, params, _ in examples] == [
        assumed for _, _, assumed in examples
    ]
