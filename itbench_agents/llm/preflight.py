"""Checks before a run starts: one clear error instead of a failed episode per scenario."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlparse

from .models import ModelConfigError, ModelSettings, api_key, parse_model


def check_reachable(url: str, timeout: float = 3.0) -> None:
    u = urlparse(url)
    if u.scheme not in {"http", "https"} or not u.hostname:
        raise ModelConfigError(f"--base-url {url!r} is not an http(s) URL")
    port = u.port or (443 if u.scheme == "https" else 80)
    try:
        with socket.create_connection((u.hostname, port), timeout=timeout):
            pass
    except OSError as exc:
        raise ModelConfigError(
            f"--base-url {url}: cannot connect to {u.hostname}:{port} ({exc.strerror or exc})"
        ) from None


def check_served(settings: ModelSettings, timeout: float = 10.0) -> None:
    """Ask an OpenAI-compatible server ``GET /models`` with the run's key: a 401/403 (wrong key)
    stops the run before its first episode. A model the server does not list is not refused here
    (llama-server lists its file name but answers to any model name); a 404 for the model at call
    time makes the episode a harness error."""
    import requests

    key = api_key(settings)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    url = settings.base_url.rstrip("/") + "/models"  # type: ignore[union-attr]
    try:
        r = requests.get(url, headers=headers, timeout=timeout)
    except requests.RequestException as exc:
        raise ModelConfigError(f"--base-url {settings.base_url}: GET /models failed: {exc}") from None
    if r.status_code in (401, 403):
        raise ModelConfigError(
            f"model {settings.model!r} at {settings.base_url}: the server refused the API key "
            f"(HTTP {r.status_code}: {r.text.strip()[:200]})"
        )


def preflight_model(settings: ModelSettings, *, replay_dir: str | None = None, role: str = "agent") -> None:
    """Validate one model's configuration; raises :class:`ModelConfigError`."""
    provider, name = parse_model(settings.model)
    if replay_dir:
        from .record import Replayer

        Replayer(replay_dir, role)  # raises when nothing was recorded for the role
        return
    if provider == "scripted":
        from .scripted import load_script

        load_script(Path(name), role=role)
        return
    if settings.base_url:
        check_reachable(settings.base_url)  # before litellm's import: seconds, where a refusal takes none
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    known = [str(getattr(p, "value", p)) for p in litellm.provider_list]
    if provider not in known:
        import difflib

        close = difflib.get_close_matches(provider, known, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ModelConfigError(f"unknown model provider {provider!r} in {settings.model!r}{hint}")
    if settings.api_key_env and not os.environ.get(settings.api_key_env):
        raise ModelConfigError(f"--api-key-env {settings.api_key_env}: that environment variable is not set")
    if settings.base_url:
        check_served(settings)
        return
    try:
        env = litellm.validate_environment(model=settings.model)
    except Exception:
        env = {"keys_in_environment": True, "missing_keys": []}
    if not env.get("keys_in_environment", True) and env.get("missing_keys"):
        raise ModelConfigError(
            f"model {settings.model!r} needs {', '.join(env['missing_keys'])} in the environment "
            "(or pass --api-key-env NAME / --base-url URL)"
        )
