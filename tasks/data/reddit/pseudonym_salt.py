"""The salt of the user pseudonyms: a secret read from the environment, never a parameter or a setting.

Flow parameters and settings are stored by Prefect and written into build.json and the run manifests,
so the salt travels apart from them: a build reads it from `THREADMED_PSEUDONYM_SALT` at its edge and
hands it to the one task that runs the SQL. Everything written about a build carries only the salt's
fingerprint and whether its pseudonyms are safe to publish.
"""

import hashlib
import os
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, SecretStr

SALT_VARIABLE = "THREADMED_PSEUDONYM_SALT"
# Public (it is in this file), so pseudonyms made with it can be reversed by hashing candidate names.
DEFAULT_SALT = "threadmed-qa"
UNPUBLISHABLE_WARNING = (
    f"NO PSEUDONYM SALT: {SALT_VARIABLE} is not set, so the public default salt is used and anyone can "
    "recover a username from its pseudonym. This build is NOT safe to publish: set "
    f"{SALT_VARIABLE} (or `threadmed build --salt`) to a long random secret."
)


class PseudonymSalt(BaseModel):
    """The salt, hidden from repr, str and serialisation (pydantic shows `**********`)."""

    model_config = ConfigDict(frozen=True)

    secret: SecretStr

    @property
    def publishable(self) -> bool:
        return self.secret.get_secret_value() != DEFAULT_SALT

    @property
    def fingerprint(self) -> str:
        """Tells builds with different salts apart without revealing the salt (hashed apart from names)."""
        digest = hashlib.sha256(
            b"threadmed pseudonym salt fingerprint\0" + self.secret.get_secret_value().encode()
        )
        return "sha256:" + digest.hexdigest()[:12]

    def describe(self) -> dict[str, str | bool]:
        """What build.json, the run manifest and the card may say about the salt."""
        return {"salt_fingerprint": self.fingerprint, "publishable": self.publishable}


def read_pseudonym_salt(environ: Mapping[str, str] = os.environ) -> PseudonymSalt:
    """The salt set in `environ`, or the public default when it is unset or empty."""
    return PseudonymSalt(secret=SecretStr(environ.get(SALT_VARIABLE) or DEFAULT_SALT))
