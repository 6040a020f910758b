import pytest
from pydantic import ValidationError

from tasks.benchmarks.threadmed.settings import BuildSettings
from tasks.data.reddit.pseudonym_salt import DEFAULT_SALT, SALT_VARIABLE, read_pseudonym_salt

CANARY = "canary-salt-0b7f3e"


def test_the_salt_comes_from_the_environment_else_the_public_default():
    assert read_pseudonym_salt({SALT_VARIABLE: CANARY}).secret.get_secret_value() == CANARY
    assert read_pseudonym_salt({}).secret.get_secret_value() == DEFAULT_SALT
    assert read_pseudonym_salt({SALT_VARIABLE: ""}).secret.get_secret_value() == DEFAULT_SALT


def test_only_a_secret_salt_is_publishable():
    assert read_pseudonym_salt({SALT_VARIABLE: CANARY}).publishable is True
    assert read_pseudonym_salt({}).publishable is False


def test_what_is_written_about_the_salt_never_holds_it():
    salt = read_pseudonym_salt({SALT_VARIABLE: CANARY})
    described = salt.describe()
    assert described == {"salt_fingerprint": salt.fingerprint, "publishable": True}
    assert salt.fingerprint.startswith("sha256:") and len(salt.fingerprint) == len("sha256:") + 12
    for text in (repr(salt), str(salt), salt.model_dump_json(), str(salt.model_dump()), str(described)):
        assert CANARY not in text


def test_the_fingerprint_tells_salts_apart():
    canary = read_pseudonym_salt({SALT_VARIABLE: CANARY}).fingerprint
    assert canary == read_pseudonym_salt({SALT_VARIABLE: CANARY}).fingerprint
    assert canary != read_pseudonym_salt({SALT_VARIABLE: CANARY + "x"}).fingerprint
    assert canary != read_pseudonym_salt({}).fingerprint


def test_the_salt_is_not_a_setting():
    assert "salt" not in BuildSettings().model_dump()
    with pytest.raises(ValidationError, match=SALT_VARIABLE):
        BuildSettings(salt=CANARY)
