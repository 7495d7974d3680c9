"""Which names hold secrets: query parameters, headers and quoted fields (:mod:`toolwire.redaction`).

Names are compared normalized (:func:`normal`: percent-decoded, lower case, ``-``
and ``_`` removed), so ``api-key``, ``api_key``, ``API-KEY`` and ``apiKey`` are one.
"""

from __future__ import annotations

from urllib.parse import unquote

#: Query parameter and header names whose values are secrets, normalized by
#: :func:`normal` (lower case, ``-`` and ``_`` removed). Sources: OpenAI/Azure
#: (``api-key``, ``subscription-key``), Google (``key``, ``x-goog-signature``),
#: AWS SigV4 presigned URLs (``X-Amz-Signature``, ``X-Amz-Credential``,
#: ``X-Amz-Security-Token``), Azure SAS (``sig``), OAuth 2.0 (RFC 6749:
#: ``access_token``, ``refresh_token``, ``client_secret``, ``code``), JWT
#: (``id_token``, ``jwt``), basic auth and sessions.
KEY_NAMES = frozenset({
    "key", "apikey", "xapikey", "apitoken", "accesskey", "secretkey", "privatekey", "subscriptionkey",
    "ocpapimsubscriptionkey", "token", "accesstoken", "refreshtoken", "idtoken", "authtoken", "sessiontoken",
    "securitytoken", "privatetoken", "bearer", "jwt", "auth", "authorization", "proxyauthorization", "xauthtoken",
    "sig", "signature", "xamzsignature", "xamzcredential", "xamzsecuritytoken", "xgoogsignature",
    "xgoogcredential", "xgoogapikey", "password", "passwd", "pwd", "pass", "passphrase", "secret",
    "clientsecret", "credential", "credentials", "code", "cookie", "setcookie", "session", "sessionid", "sid",
    "hmac", "otp",
})

#: Name endings that make a query parameter name key-like too (``x-custom-token``).
KEY_SUFFIXES = ("key", "token", "secret", "password", "passwd", "signature", "credential", "credentials", "auth")

#: Names of quoted fields (``"apiKey": "…"``, ``'password': '…'``, ``api_key="…"``)
#: whose values are masked in any text, e.g. a settings dict a library logs. Narrower
#: than :data:`KEY_NAMES`: ``code``, ``session`` and ``sid`` name ordinary fields of
#: log lines (``"code": "invalid_api_key"``, ``"sessionId"``).
FIELD_NAMES = KEY_NAMES - {"code", "session", "sessionid", "sid", "cookie", "setcookie", "key", "pass", "pwd", "otp"}

#: Field name endings masked likewise (``"stripeSecret"``, ``"githubToken"``, ``"x-api-key"``).
FIELD_SUFFIXES = ("apikey", "token", "secret", "password", "passwd")


def normal(name: str) -> str:
    """``name`` percent-decoded, in lower case, without ``-`` and ``_``."""
    return unquote(name).lower().replace("-", "").replace("_", "")


def is_key_name(name: str) -> bool:
    """True when ``name`` (a query parameter or header name, any case, ``-`` or ``_``
    separated, percent-encoded or not) names a secret (:data:`KEY_NAMES`,
    :data:`KEY_SUFFIXES`)."""
    key = normal(name)
    return key in KEY_NAMES or key.endswith(KEY_SUFFIXES)


def is_field_name(name: str) -> bool:
    """True when a quoted field ``name`` in text names a secret (:data:`FIELD_NAMES`,
    :data:`FIELD_SUFFIXES`)."""
    key = normal(name)
    return key in FIELD_NAMES or key.endswith(FIELD_SUFFIXES)
