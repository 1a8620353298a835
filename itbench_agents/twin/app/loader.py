"""Load an app model folder: ``app.yaml`` + ``manifests/*.yaml`` + ``behaviour.yaml``.

``load_app("otel-demo")`` reads ``scenarios/apps/otel-demo/``; any folder path works too (users bring
their own app). Errors are :class:`AppLoadError` naming the file, the line and the field, and what
was expected.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from ...paths import scenarios_dir
from .model import AppModel, AppSpec, Behaviour

Obj = dict[str, Any]
M = TypeVar("M", bound=BaseModel)

CLUSTER_SCOPED = {
    "Namespace",
    "Node",
    "PersistentVolume",
    "StorageClass",
    "ClusterRole",
    "ClusterRoleBinding",
    "PriorityClass",
    "CustomResourceDefinition",
}


class AppLoadError(ValueError):
    """A malformed app folder: ``file:line: field: problem``."""

    def __init__(self, file: Path | str, line: int | None, field: str, problem: str) -> None:
        self.file, self.line, self.field, self.problem = str(file), line, field, problem
        where = f"{file}:{line}" if line else str(file)
        super().__init__(f"{where}: {field}: {problem}" if field else f"{where}: {problem}")


def app_folder(name_or_path: str | Path) -> Path:
    p = Path(name_or_path)
    if p.is_dir():
        return p
    candidate = scenarios_dir() / "apps" / str(name_or_path)
    if candidate.is_dir():
        return candidate
    known = sorted(d.name for d in (scenarios_dir() / "apps").iterdir() if (d / "app.yaml").is_file())
    raise AppLoadError(str(name_or_path), None, "", f"no such app folder; known app ids: {', '.join(known)}")


_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_CACHE: dict[tuple[str, tuple[tuple[str, float], ...]], AppModel] = {}


def load_app(name_or_path: str | Path) -> AppModel:
    """Load and validate an app folder (cached by file modification times; each call gets its own
    copy of the manifests)."""
    folder = app_folder(name_or_path).resolve()
    stamp = tuple(sorted((str(p), p.stat().st_mtime) for p in folder.rglob("*.yaml")))
    key = (str(folder), stamp)
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = _load(folder)
    cached = _CACHE[key]
    return cached.model_copy(update={"manifests": json.loads(json.dumps(cached.manifests))})


def _load(folder: Path) -> AppModel:
    spec = _load_model(folder / "app.yaml", AppSpec)
    behaviour = _load_model(folder / spec.behaviour, Behaviour)
    manifests: list[Obj] = []
    for rel in spec.manifests:
        path = folder / rel
        files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
        for f in files:
            manifests.extend(_load_manifests(f, spec.namespace))
    return AppModel(
        id=spec.id,
        namespace=spec.namespace,
        description=spec.description,
        manifests=manifests,
        behaviour=behaviour,
        folder=str(folder),
    )


def _read(path: Path) -> str:
    if not path.is_file():
        raise AppLoadError(path, None, "", "file not found")
    return path.read_text()


def _load_model(path: Path, model: type[M]) -> M:
    text = _read(path)
    try:
        data = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise AppLoadError(path, mark.line + 1 if mark else None, "", f"invalid YAML: {e}") from e
    if not isinstance(data, dict):
        raise AppLoadError(path, 1, "", f"expected a mapping at the top level, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        # a misspelt key shows up twice (unknown + missing): name the unknown one, it is the cause
        err = sorted(e.errors(), key=lambda x: x["type"] != "extra_forbidden")[0]
        loc = [str(x) for x in err["loc"]]
        line = _line_of(yaml.compose(text, Loader=_Loader), loc)
        field = ".".join(loc) or "(top level)"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown field (not allowed here)"
        elif err["type"] == "missing":
            msg = "field required"
        extra = f" (and {len(e.errors()) - 1} more problems)" if len(e.errors()) > 1 else ""
        raise AppLoadError(path, line, field, f"{msg}; got {err.get('input')!r:.80}{extra}") from e


def _line_of(node: yaml.Node | None, loc: list[str]) -> int | None:
    """Follow a pydantic error location through the YAML node tree to a line number."""
    best = node.start_mark.line + 1 if node is not None else None
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            nxt = None
            for k, v in node.value:
                if str(k.value) == key:
                    nxt = v
                    best = k.start_mark.line + 1
                    break
            if nxt is None:
                return best
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and key.isdigit() and int(key) < len(node.value):
            node = node.value[int(key)]
            best = node.start_mark.line + 1
        else:
            return best
    return best


def _load_manifests(path: Path, namespace: str) -> list[Obj]:
    text = _read(path)
    try:
        docs = list(yaml.load_all(text, Loader=_Loader))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise AppLoadError(path, mark.line + 1 if mark else None, "", f"invalid YAML: {e}") from e
    out: list[Obj] = []
    docs = [d for d in docs if d is not None]
    nodes: list[Any] = []
    for i, doc in enumerate(docs):
        problem = _manifest_problem(doc, namespace)
        if problem is not None:
            if not nodes:
                nodes = [n for n in yaml.compose_all(text, Loader=_Loader) if n is not None]
            node = nodes[i]
            raise AppLoadError(path, _line_of(node, problem[0]), ".".join(problem[0]), problem[1])
        meta = doc["metadata"]
        if doc["kind"] not in CLUSTER_SCOPED:
            doc = {**doc, "metadata": {**meta, "namespace": namespace}}
        out.append(doc)
    return out


def _manifest_problem(doc: Any, namespace: str) -> tuple[list[str], str] | None:
    """(field path, problem) for a malformed manifest document, or None."""
    if not isinstance(doc, dict):
        return [], "expected a Kubernetes object (a mapping)"
    for field in ("apiVersion", "kind"):
        if not isinstance(doc.get(field), str) or not doc[field]:
            return [field], "field required (a non-empty string)"
    meta = doc.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        return ["metadata", "name"], "field required"
    if doc["kind"] == "List":
        return ["kind"], "List objects are not supported; write one object per document"
    if doc["kind"] not in CLUSTER_SCOPED and meta.get("namespace") not in (None, namespace):
        return ["metadata", "namespace"], f"expected {namespace!r} (the app's namespace) or no namespace"
    return None
