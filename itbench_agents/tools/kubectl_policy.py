"""The kubectl tool's safety policy: which command lines it will run, and why it refuses others.

The policy looks only at argv (the tool never uses a shell). It refuses:

- interactive or tunnelling verbs: ``exec``, ``attach``, ``port-forward``, ``proxy``, ``edit``,
  ``cp``, ``debug``, ``run -i/-t``;
- connection overrides (``--kubeconfig``, ``--context``, ``--server``, ``--token``, ``--as`` ...):
  the environment sets them;
- mutating verbs during the diagnosis phase;
- deleting namespaces or nodes, and mutating across all namespaces;
- namespaces outside the allow-list;
- ``-f`` files outside the work folder (``-f -`` reads the tool's ``stdin`` argument).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .context import Phase

READ_VERBS = {
    "get", "describe", "logs", "top", "explain", "api-resources", "api-versions", "version",
    "cluster-info", "events", "auth", "diff", "wait",
}  # fmt: skip
MUTATE_VERBS = {
    "apply", "create", "delete", "patch", "replace", "scale", "set", "label", "annotate",
    "autoscale", "cordon", "uncordon", "drain", "taint", "expose", "run", "rollout",
}  # fmt: skip
FORBIDDEN_VERBS = {
    "exec": "opens an interactive session in a container",
    "attach": "attaches to a running container",
    "port-forward": "opens a tunnel",
    "proxy": "opens a proxy to the API server",
    "edit": "needs an interactive editor (use patch or apply)",
    "cp": "copies files in and out of containers",
    "debug": "starts interactive debugging containers",
    "plugin": "runs arbitrary plugins",
    "kustomize": "is not available",
    "certificate": "manages cluster credentials",
}
ROLLOUT_READ = {"status", "history"}
CONNECTION_FLAGS = {
    "--kubeconfig", "--context", "--cluster", "--user", "--server", "-s", "--token", "--as",
    "--as-group", "--as-uid", "--certificate-authority", "--client-certificate", "--client-key",
    "--insecure-skip-tls-verify", "--username", "--password", "--tls-server-name",
}  # fmt: skip
VALUE_FLAGS = {
    "-n", "--namespace", "-o", "--output", "-l", "--selector", "-f", "--filename", "-c", "--container",
    "-p", "--patch", "--type", "--field-selector", "--sort-by", "--replicas", "--to-revision", "--tail",
    "--since", "--since-time", "-L", "--label-columns", "--image", "--timeout", "--for", "--subresource",
    "--cascade", "--grace-period", "--min", "--max", "--cpu-percent", "--port",
    "--target-port", "--name", "--limits", "--requests", "--resource", "-e", "--env", "--chunk-size",
    "--template", "--raw", "--context",
}  # fmt: skip
NAMESPACE_KINDS = {"namespace", "namespaces", "ns"}
NODE_KINDS = {"node", "nodes", "no"}


@dataclass
class PolicyDecision:
    allowed: bool
    reason: str = ""
    argv: list[str] = field(default_factory=list)
    """The argv to run (without the binary and connection flags), e.g. with ``-n`` filled in."""
    mutating: bool = False
    verb: str = ""


def _flag_name(tok: str) -> str:
    return tok.split("=", 1)[0]


def split_verb(argv: list[str]) -> tuple[str, list[str], list[str]]:
    """(verb, positional args after the verb, flags) of a kubectl argv."""
    positional: list[str] = []
    flags: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok.startswith("-") and tok != "-":
            flags.append(tok)
            name = _flag_name(tok)
            if "=" not in tok and name in VALUE_FLAGS and i + 1 < len(argv):
                flags.append(argv[i + 1])
                i += 1
            elif len(tok) > 2 and tok[1] != "-" and tok[:2] in {"-n", "-o", "-l", "-f", "-c", "-p"}:
                pass  # -nfoo style: value attached
        else:
            positional.append(tok)
        i += 1
    verb = positional[0] if positional else ""
    return verb, positional[1:], flags


def flag_values(argv: list[str], *names: str) -> list[str]:
    """Values of the flags ``names`` (``-n x``, ``-n=x``, ``--namespace=x``, ``-nx``)."""
    out: list[str] = []
    for i, tok in enumerate(argv):
        for n in names:
            if tok == n and i + 1 < len(argv):
                out.append(argv[i + 1])
            elif tok.startswith(n + "="):
                out.append(tok[len(n) + 1 :])
            elif len(n) == 2 and tok.startswith(n) and len(tok) > 2 and not tok.startswith("--"):
                out.append(tok[2:])
    return out


def check(
    argv: list[str], *, phase: Phase, namespaces: list[str], workdir: str | None = None
) -> PolicyDecision:
    """Decide whether ``argv`` (without the leading ``kubectl``) may run."""
    if not argv:
        return PolicyDecision(False, "empty command; try e.g. `get pods -n <namespace>`")
    for tok in argv:
        if _flag_name(tok) in CONNECTION_FLAGS:
            return PolicyDecision(
                False, f"{_flag_name(tok)} is not allowed: the environment sets the connection"
            )
    verb, pos, flags = split_verb(argv)
    if not verb:
        return PolicyDecision(False, "no kubectl command given (e.g. `get pods -n <namespace>`)")
    if verb in FORBIDDEN_VERBS:
        return PolicyDecision(False, f"`kubectl {verb}` is refused: it {FORBIDDEN_VERBS[verb]}", verb=verb)
    if verb == "config":
        sub = pos[0] if pos else ""
        if sub in {"view", "get-contexts", "current-context"}:
            return PolicyDecision(True, argv=list(argv), verb=verb)
        return PolicyDecision(False, "`kubectl config` may only view the configuration", verb=verb)
    interactive = {"-i", "-t", "-it", "-ti", "--stdin", "--tty", "--attach"}
    if verb == "run" and any(_flag_name(f) in interactive for f in flags):
        return PolicyDecision(
            False, "`kubectl run -i/-t` is refused: it opens an interactive session", verb=verb
        )
    if verb == "logs" and any(_flag_name(t) in {"-f", "--follow"} for t in argv):
        return PolicyDecision(
            False, "`kubectl logs -f` streams forever; use --tail=N or --since=10m", verb=verb
        )
    if any(_flag_name(t) in {"-w", "--watch", "--watch-only"} for t in argv):
        return PolicyDecision(False, "--watch streams forever; run the command again instead", verb=verb)
    if verb not in READ_VERBS and verb not in MUTATE_VERBS:
        return PolicyDecision(False, f"unknown or unsupported kubectl command {verb!r}", verb=verb)
    mutating = verb in MUTATE_VERBS
    if verb == "rollout" and pos and pos[0] in ROLLOUT_READ:
        mutating = False
    if verb == "diff" or verb == "wait":
        mutating = False
    if mutating and any(_flag_name(f) == "--dry-run" for f in flags):
        dry = flag_values(argv, "--dry-run")
        if dry and dry[0] in {"client", "server"}:
            mutating = False
    if mutating and phase == "diagnosis":
        return PolicyDecision(
            False,
            f"`kubectl {verb}` changes the cluster and is refused during diagnosis; only read-only "
            "commands (get, describe, logs, top, events, rollout history...) are allowed now",
            verb=verb,
            mutating=True,
        )
    if verb == "delete" and pos:
        kinds = {k.split("/", 1)[0].split(".", 1)[0].lower() for k in pos[0].split(",")}
        if kinds & NAMESPACE_KINDS:
            return PolicyDecision(False, "deleting namespaces is refused", verb=verb, mutating=True)
        if kinds & NODE_KINDS:
            return PolicyDecision(False, "deleting nodes is refused", verb=verb, mutating=True)
    all_ns = any(_flag_name(f) in {"-A", "--all-namespaces"} for f in flags)
    if all_ns and mutating:
        return PolicyDecision(
            False, "mutating commands may not use --all-namespaces", verb=verb, mutating=True
        )
    out = list(argv)
    ns_given = flag_values(argv, "-n", "--namespace")
    if namespaces:
        for ns in ns_given:
            if ns not in namespaces:
                return PolicyDecision(
                    False,
                    f"namespace {ns!r} is outside this task's namespaces ({', '.join(namespaces)})",
                    verb=verb,
                    mutating=mutating,
                )
        if not ns_given and not all_ns:
            out += ["-n", namespaces[0]]
    for f in flag_values(argv, "-f", "--filename"):
        if f == "-":
            continue
        if "://" in f:
            return PolicyDecision(
                False, "-f URLs are refused; pass the manifest as stdin with -f -", verb=verb
            )
        if workdir is None or not Path(workdir, f).resolve().is_relative_to(Path(workdir).resolve()):
            return PolicyDecision(
                False, "-f may only read files in the work folder (or use -f - with stdin)", verb=verb
            )
    return PolicyDecision(True, argv=out, mutating=mutating, verb=verb)
