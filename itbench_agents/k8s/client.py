"""A small Kubernetes REST client (plain HTTP + discovery) for fault injection and mitigation.

Scenario operations are applied through the Kubernetes API so that the same spec injects on the
twin and on a live cluster. This client speaks the REST API directly (``requests``): discovery maps
``apiVersion``/``kind`` to the resource path, then create/patch/delete/get/list.

:meth:`KubeApi.from_kubeconfig` reads a kubeconfig with the official ``kubernetes`` client's loader,
so every way a kubeconfig authenticates works as with kubectl: bearer tokens, exec credential
plugins (EKS, GKE; the token is asked for again when it expires), client certificates (kind), a
custom CA or ``insecure-skip-tls-verify``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import requests

PATCH_CONTENT_TYPES = {
    "strategic": "application/strategic-merge-patch+json",
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
}


class KubeApiError(RuntimeError):
    """The API server refused an operation; ``status`` is the Kubernetes Status body when given."""

    def __init__(self, message: str, code: int = 0, status: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.status = status or {}


@dataclass(frozen=True)
class ResourceInfo:
    api_version: str
    kind: str
    plural: str
    namespaced: bool


class KubeApi:
    def __init__(
        self, base_url: str, token: str | None = None, timeout: float = 30.0, verify: bool = True
    ) -> None:
        self.base = base_url.rstrip("/")
        self.session = requests.Session()
        self.session.verify = verify
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"
        self.timeout = timeout
        self._resources: dict[tuple[str, str], ResourceInfo] = {}
        self._discovered: set[str] = set()
        self._credentials: Any = None
        """The kubeconfig's ``kubernetes.client.Configuration``: asked for its auth headers on every
        request (an exec plugin's token is refreshed there)."""

    @classmethod
    def from_kubeconfig(
        cls, kube_url: str | None, kubeconfig: str, timeout: float = 30.0, context: str | None = None
    ) -> KubeApi:
        """A client with the credentials of ``kubeconfig``'s current context (or ``context``):
        token, exec plugin, client certificate, CA. ``kube_url`` overrides the kubeconfig's server
        (None: the kubeconfig's). A kubeconfig that cannot be loaded raises :class:`KubeApiError`."""
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException

        cfg = client.Configuration()
        try:
            config.load_kube_config(
                config_file=kubeconfig, context=context, client_configuration=cfg, persist_config=False
            )
        except (ConfigException, OSError, ValueError) as e:
            raise KubeApiError(f"kubeconfig {kubeconfig}: {e}") from e
        verify: bool | str = bool(cfg.verify_ssl)
        if cfg.verify_ssl and cfg.ssl_ca_cert:
            verify = str(cfg.ssl_ca_cert)
        api = cls(kube_url or str(cfg.host), timeout=timeout)
        api.session.verify = verify
        if cfg.cert_file and cfg.key_file:
            api.session.cert = (str(cfg.cert_file), str(cfg.key_file))
        api._credentials = cfg
        return api

    def version(self) -> dict[str, Any]:
        """``GET /version``: the server's build (``kubectl version``); raises when it does not answer."""
        return dict(self._request("GET", "/version"))

    def post(self, path: str, body: Any) -> dict[str, Any]:
        """``POST`` to a raw API path (e.g. a ServiceAccount's ``/token`` subresource)."""
        return dict(self._request("POST", path, body))

    # ------------------------------------------------------------------ discovery
    def _discover(self, api_version: str) -> None:
        if api_version in self._discovered:
            return
        path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        data = self._request("GET", path)
        for r in data.get("resources", []):
            if "/" in r.get("name", ""):
                continue  # subresource
            self._resources[(api_version, r["kind"])] = ResourceInfo(
                api_version, r["kind"], r["name"], bool(r.get("namespaced"))
            )
        self._discovered.add(api_version)

    def api_resources(self, verbs: tuple[str, ...] = ("list",)) -> list[ResourceInfo]:
        """Every resource type the server serves at its groups' preferred versions whose verbs
        include ``verbs`` (``kubectl api-resources --verbs=...``); subresources left out."""
        versions = ["v1"] + [
            str((g.get("preferredVersion") or {}).get("groupVersion") or "")
            for g in self._request("GET", "/apis").get("groups", [])
        ]
        out = []
        for version in filter(None, versions):
            path = "/api/v1" if version == "v1" else f"/apis/{version}"
            for r in self._request("GET", path).get("resources", []):
                if "/" in r.get("name", "") or not set(verbs) <= set(r.get("verbs") or []):
                    continue
                info = ResourceInfo(version, r["kind"], r["name"], bool(r.get("namespaced")))
                self._resources[(version, r["kind"])] = info
                out.append(info)
            self._discovered.add(version)
        return out

    def resource(self, api_version: str, kind: str) -> ResourceInfo:
        self._discover(api_version)
        info = self._resources.get((api_version, kind))
        if info is None:
            raise KubeApiError(f'the server doesn\'t have a resource type "{kind}" in {api_version}', 404)
        return info

    def _path(self, api_version: str, kind: str, namespace: str | None, name: str | None = None) -> str:
        info = self.resource(api_version, kind)
        prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        if info.namespaced:
            prefix += f"/namespaces/{namespace or 'default'}"
        prefix += f"/{info.plural}"
        return prefix + (f"/{name}" if name else "")

    # ------------------------------------------------------------------ HTTP
    def _request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        headers = {"Accept": "application/json"}
        if self._credentials is not None:  # the official client's own auth settings (token, exec, basic)
            for setting in self._credentials.auth_settings().values():
                if setting.get("in") == "header" and setting.get("value"):
                    headers[setting["key"]] = setting["value"]
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = json.dumps(body)
        try:
            resp = self.session.request(
                method,
                self.base + path,
                data=data,
                headers=headers,
                timeout=self.timeout,
                # given per request: requests lets $REQUESTS_CA_BUNDLE override the session's CA
                verify=self.session.verify,
            )
        except requests.RequestException as e:
            raise KubeApiError(f"{method} {path}: cannot reach the API server: {e}") from e
        if resp.status_code >= 400:
            try:
                status = resp.json()
                msg = status.get("message") or resp.text
            except ValueError:
                status, msg = {}, resp.text
            raise KubeApiError(f"{method} {path}: {resp.status_code} {msg}", resp.status_code, status)
        return resp.json() if resp.content else {}

    # ------------------------------------------------------------------ verbs
    def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> dict[str, Any]:
        return dict(self._request("GET", self._path(api_version, kind, namespace, name)))

    def exists(self, api_version: str, kind: str, namespace: str | None, name: str) -> bool:
        try:
            self.get(api_version, kind, namespace, name)
        except KubeApiError as e:
            if e.code == 404:
                return False
            raise
        return True

    def list(self, api_version: str, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        info = self.resource(api_version, kind)
        prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        if info.namespaced and namespace:
            prefix += f"/namespaces/{namespace}"
        items = self._request("GET", f"{prefix}/{info.plural}").get("items", [])
        for it in items:
            it.setdefault("kind", kind)
            it.setdefault("apiVersion", api_version)
        return list(items)

    def create(self, obj: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        """POST ``obj``; with ``dry_run`` the server admits it (webhooks included) and stores nothing."""
        m = obj.get("metadata", {})
        path = self._path(obj["apiVersion"], obj["kind"], m.get("namespace"))
        return dict(self._request("POST", path + ("?dryRun=All" if dry_run else ""), obj))

    def replace(self, obj: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        m = obj.get("metadata", {})
        path = self._path(obj["apiVersion"], obj["kind"], m.get("namespace"), m["name"])
        return dict(self._request("PUT", path + ("?dryRun=All" if dry_run else ""), obj))

    def patch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        name: str,
        patch: Any,
        patch_type: str = "strategic",
    ) -> dict[str, Any]:
        path = self._path(api_version, kind, namespace, name)
        return dict(self._request("PATCH", path, patch, PATCH_CONTENT_TYPES[patch_type]))

    def delete(self, api_version: str, kind: str, namespace: str | None, name: str) -> dict[str, Any]:
        return dict(self._request("DELETE", self._path(api_version, kind, namespace, name)))
