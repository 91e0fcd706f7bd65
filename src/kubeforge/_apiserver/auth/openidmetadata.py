"""ServiceAccount issuer discovery: the OpenID Connect documents that let systems outside the
cluster verify its ServiceAccount tokens.

`/.well-known/openid-configuration` names the issuer and where its keys are;
`/openid/v1/jwks` is the JSON Web Key Set of the key that signs the tokens. Both are rendered
once, as kube-apiserver renders them (kubernetes pkg/serviceaccount/openidmetadata.go) and
served with its content types and cache header (pkg/routes/openidmetadata.go). Who may read
them is RBAC's to say: the bootstrap role `system:service-account-issuer-discovery` is bound
to every ServiceAccount (`system:serviceaccounts`).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import orjson
from jwt.algorithms import ECAlgorithm

from kubeforge._apiserver.auth.tokens import SIGNING_ALGORITHM, TokenIssuer

__all__ = [
    "CACHE_CONTROL",
    "CONFIGURATION_PATH",
    "JWKS_CONTENT_TYPE",
    "JWKS_PATH",
    "OpenIDMetadata",
]

CONFIGURATION_PATH = "/.well-known/openid-configuration"
JWKS_PATH = "/openid/v1/jwks"
JWKS_CONTENT_TYPE = "application/jwk-set+json"  # RFC 7517, section 8.5.1
# The public keys change only with the server's key: relying parties may keep them an hour.
CACHE_CONTROL = "public, max-age=3600"


def _https_url(url: str) -> bool:
    """Whether `url` is an https URL without a query or fragment, as OIDC discovery wants."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme == "https" and bool(parts.netloc) and not parts.query and not parts.fragment


class OpenIDMetadata:
    """The rendered discovery documents of one token issuer. Not `available` when the
    issuer is not an https URL: kube-apiserver then serves neither document."""

    def __init__(self, issuer: TokenIssuer, jwks_uri: str) -> None:
        self.available = _https_url(issuer.issuer) and _https_url(jwks_uri)
        key = ECAlgorithm.to_jwk(issuer.public_key, as_dict=True)
        # go-jose's field order: use, kty, kid, crv, alg, x, y.
        jwk = {
            "use": "sig",
            "kty": key["kty"],
            "kid": issuer.key_id,
            "crv": key["crv"],
            "alg": SIGNING_ALGORITHM,
            "x": key["x"],
            "y": key["y"],
        }
        self.keyset = orjson.dumps({"keys": [jwk]})
        self.configuration = orjson.dumps(
            {
                "issuer": issuer.issuer,
                "jwks_uri": jwks_uri,
                "response_types_supported": ["id_token"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": [SIGNING_ALGORITHM],
            }
        )
