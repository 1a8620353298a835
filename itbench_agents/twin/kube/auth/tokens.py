"""Bearer tokens: the static admin token and ServiceAccount tokens minted by the TokenRequest API.

A ServiceAccount token is a JWT shaped like the apiserver's (``iss``, ``sub``, ``aud``, ``exp``,
``iat``, ``nbf``, ``jti`` and the ``kubernetes.io`` claim), signed with HS256 under a key drawn per
twin from ``secrets`` (unguessable, never derived from the seed). The twin also remembers every token
it minted (by ``jti``) and accepts only those, while the ServiceAccount they name still exists with the
same uid and the token has not expired on the twin's (virtual) clock.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from typing import Any

from ....k8s.kinds import GroupResource
from .users import UserInfo, service_account_user

ADMIN_TOKEN = "itbench-twin"
"""The admin token of a twin that was given no other (``Twin.admin_token``'s default)."""
ISSUER = "https://kubernetes.default.svc.cluster.local"
API_AUDIENCES = (ISSUER,)
SERVICE_ACCOUNTS = GroupResource("", "serviceaccounts")
DEFAULT_EXPIRATION_S = 3600
MIN_EXPIRATION_S = 600
MAX_EXPIRATION_S = 1 << 32


class InvalidToken(Exception):
    """A bearer token the twin does not accept (the apiserver answers 401 Unauthorized)."""


@dataclass(frozen=True)
class Minted:
    jti: str
    namespace: str
    name: str
    sa_uid: str
    audiences: tuple[str, ...]
    issued: float
    expires: float
    bound: tuple[str, str, str] | None = None  # (kind, name, uid) of a bound object


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(s: str) -> bytes:
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


class TokenAuthority:
    """Mints and checks the tokens of one twin."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)
        self._kid = _b64(hashlib.sha256(self._key).digest()[:16])
        self._minted: dict[str, Minted] = {}
        self._verified: dict[str, Minted] = {}  # token → its record, once its signature checked out
        self.static: dict[str, UserInfo] = {}
        """Extra static tokens; the admin token is ``authenticate``'s (``twin.admin_token``), never kept here."""

    def mint(
        self,
        namespace: str,
        name: str,
        sa_uid: str,
        now: float,
        expiration_s: int = DEFAULT_EXPIRATION_S,
        audiences: tuple[str, ...] = API_AUDIENCES,
        bound: tuple[str, str, str] | None = None,
    ) -> tuple[str, Minted]:
        jti = secrets.token_hex(16)
        issued = int(now)
        rec = Minted(jti, namespace, name, sa_uid, audiences, issued, issued + expiration_s, bound)
        claims: dict[str, Any] = {
            "aud": list(audiences),
            "exp": int(rec.expires),
            "iat": issued,
            "iss": ISSUER,
            "jti": jti,
            "kubernetes.io": {"namespace": namespace, "serviceaccount": {"name": name, "uid": sa_uid}},
            "nbf": issued,
            "sub": f"system:serviceaccount:{namespace}:{name}",
        }
        if bound is not None:
            claims["kubernetes.io"][bound[0].lower()] = {"name": bound[1], "uid": bound[2]}
        header = _b64(json.dumps({"alg": "HS256", "kid": self._kid}, separators=(",", ":")).encode())
        payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
        signing = f"{header}.{payload}".encode()
        sig = _b64(hmac.new(self._key, signing, hashlib.sha256).digest())
        self._minted[jti] = rec
        return f"{header}.{payload}.{sig}", rec

    def _record(self, token: str) -> Minted:
        hit = self._verified.get(token)
        if hit is not None:
            return hit
        rec = self._verify(token)
        if len(self._verified) > 10_000:
            self._verified.clear()
        self._verified[token] = rec
        return rec

    def _verify(self, token: str) -> Minted:
        parts = token.split(".")
        if len(parts) != 3:
            raise InvalidToken("invalid bearer token")
        expected = _b64(hmac.new(self._key, f"{parts[0]}.{parts[1]}".encode(), hashlib.sha256).digest())
        if not hmac.compare_digest(expected, parts[2]):
            raise InvalidToken("invalid bearer token")
        try:
            claims = json.loads(_unb64(parts[1]))
        except ValueError as e:
            raise InvalidToken("invalid bearer token") from e
        rec = self._minted.get(str(claims.get("jti", ""))) if isinstance(claims, dict) else None
        if rec is None:
            raise InvalidToken("invalid bearer token")
        return rec

    def user_for(
        self, token: str, store: Any, now: float, audiences: tuple[str, ...] = API_AUDIENCES
    ) -> UserInfo:
        """The user a bearer token authenticates (``InvalidToken`` when the twin does not accept it)."""
        static = self.static.get(token)
        if static is not None:
            return static
        rec = self._record(token)
        if now >= rec.expires:
            raise InvalidToken("service account token has expired")
        if not set(rec.audiences) & set(audiences):
            raise InvalidToken("token audiences is invalid for the target audiences")
        sa = store.get(SERVICE_ACCOUNTS, rec.namespace, rec.name)
        if sa is None or sa["metadata"].get("deletionTimestamp"):
            raise InvalidToken(f'serviceaccounts "{rec.name}" not found')
        if sa["metadata"].get("uid") != rec.sa_uid:
            raise InvalidToken(f"service account UID ({rec.sa_uid}) does not match claim")
        if rec.bound is not None:
            kind, bname, buid = rec.bound
            gr = GroupResource("", "pods" if kind == "Pod" else "secrets")
            bobj = store.get(gr, rec.namespace, bname)
            if bobj is None or bobj["metadata"].get("uid") != buid:
                raise InvalidToken(f'{gr.resource} "{bname}" not found')
        extra = {"authentication.kubernetes.io/credential-id": [f"JTI={rec.jti}"]}
        if rec.bound is not None and rec.bound[0] == "Pod":
            extra["authentication.kubernetes.io/pod-name"] = [rec.bound[1]]
            extra["authentication.kubernetes.io/pod-uid"] = [rec.bound[2]]
        return service_account_user(rec.namespace, rec.name, rec.sa_uid, extra)
