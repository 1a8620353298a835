"""The kubectl tool's safety policy: which command lines it will run, and why it refuses others.

The policy looks only at argv (the tool never uses a shell). It refuses:

- interactive or tunnelling verbs: ``exec``, ``attach``, ``port-forward``, ``proxy``, ``edit``,
  ``cp``, ``debug``, ``run -i/-t``;
- connection overrides (``--kubeconfig``, ``--context``, ``--server``, ``--token``, ``--as`` ...):
  the environment sets them;
- mutating verbs during the diagnosis phase;
- deleting namespaces or nodes, and mutating across all namespaces;
- namespaces outside the allow-list;
- local paths outside the work folder, in every flag that reads or writes one (``-f``, ``-k``,
  ``--profile-output``, ``--cache-dir``, ``--from-file``, ``-o jsonpath-file=``...; ``-f -`` reads
  the tool's ``stdin`` argument), in every spelling pflag accepts (``-Rf DIR``, ``-sURL``, ``-As URL``).

What the credential may do on the cluster (read-only while diagnosing, no namespace deletion, no
cluster-scoped deletes) is enforced by the API server's RBAC; the verb checks here only explain
the refusal early.
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
NAMESPACE_KINDS = {"namespace", "namespaces", "ns"}
NODE_KINDS = {"node", "nodes", "no"}


LOCAL_PATH_FLAGS = {
    "--filename", "--kustomize", "--profile-output", "--cache-dir", "--log-file", "--log-dir",
    "--from-file", "--from-env-file", "--env-file", "--template", "--output-directory",
}  # fmt: skip
"""Flags naming local files or folders kubectl reads or writes: they must stay in the work folder."""
SHORTHANDS = {"n": "--namespace", "o": "--output", "l": "--selector", "f": "--filename", "k": "--kustomize",
              "c": "--container", "s": "--server", "L": "--label-columns", "v": "--v", "p": "--patch",
              "A": "--all-namespaces", "R": "--recursive", "w": "--watch", "i": "--stdin", "t": "--tty",
              "h": "--help", "q": "--quiet"}  # fmt: skip
SHORT_VALUE = set("noflkcsLvp")
LOGS_BOOL = {"f": "--follow", "p": "--previous"}
LONG_VALUE = {
    "--namespace", "--output", "--selector", "--filename", "--kustomize", "--container", "--patch",
    "--type", "--field-selector", "--sort-by", "--replicas", "--to-revision", "--tail", "--since",
    "--since-time", "--label-columns", "--image", "--timeout", "--for", "--subresource", "--cascade",
    "--grace-period", "--min", "--max", "--cpu-percent", "--port", "--target-port", "--name",
    "--limits", "--requests", "--resource", "--env", "--chunk-size", "--template", "--raw",
    "--profile", "--profile-output", "--cache-dir", "--log-file", "--log-dir", "--from-file",
    "--from-env-file", "--env-file", "--from-literal", "--output-directory", "--v", "--dry-run",
    "--field-manager", "--overrides", "--containers", "--revision", "--server", "--kubeconfig",
    "--context", "--cluster", "--user", "--token", "--as", "--as-group", "--as-uid",
    "--certificate-authority", "--client-certificate", "--client-key", "--username", "--password",
    "--tls-server-name", "--request-timeout", "--max-log-requests", "--prefix", "--pod-running-timeout",
}  # fmt: skip
"""Long flags that take a value in the next argument when it is not attached with ``=``."""
BOOL_VALUED = {"--dry-run"}
"""Flags whose value must be attached (``--dry-run=server``); alone they are booleans."""


@dataclass
class PolicyDecision:
    allowed: bool
    reason: str = ""
    argv: list[str] = field(default_factory=list)
    """The argv to run (without the binary and connection flags), e.g. with ``-n`` filled in."""
    mutating: bool = False
    verb: str = ""


@dataclass
class ParsedArgs:
    """An argv read the way kubectl's flag parser (pflag) reads it."""

    positional: list[str] = field(default_factory=list)
    flags: list[tuple[str, str | None]] = field(default_factory=list)
    """(long name, value) in order; short flags are reported under their long name."""

    def values(self, *names: str) -> list[str]:
        return [v for n, v in self.flags if n in names and v is not None]

    def has(self, *names: str) -> bool:
        return any(n in names for n, _ in self.flags)

    @property
    def verb(self) -> str:
        return self.positional[0] if self.positional else ""


def parse_args(argv: list[str]) -> ParsedArgs:
    """Split ``argv`` into positionals and flags as pflag does: ``--name=value``, ``--name value``,
    ``-n value``, ``-nvalue``, clusters of short booleans ending in a value flag (``-Rf dir``,
    ``-As URL``), and ``--`` ending the flags."""
    out = ParsedArgs()
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            out.positional.extend(argv[i + 1 :])
            break
        if tok.startswith("--"):
            name, eq, value = tok.partition("=")
            if eq:
                out.flags.append((name, value))
            elif name in LONG_VALUE and name not in BOOL_VALUED and i + 1 < len(argv):
                out.flags.append((name, argv[i + 1]))
                i += 1
            else:
                out.flags.append((name, None))
        elif tok.startswith("-") and tok != "-" and len(tok) > 1:
            body = tok[1:]
            verb = out.verb
            for j, ch in enumerate(body):
                long = SHORTHANDS.get(ch, "-" + ch)
                if verb == "logs" and ch in LOGS_BOOL:  # `logs -f` follows, `logs -p` is --previous
                    out.flags.append((LOGS_BOOL[ch], None))
                    continue
                takes_value = ch in SHORT_VALUE
                if takes_value:
                    rest = body[j + 1 :]
                    if rest.startswith("="):
                        rest = rest[1:]
                    if rest:
                        out.flags.append((long, rest))
                    elif i + 1 < len(argv):
                        out.flags.append((long, argv[i + 1]))
                        i += 1
                    else:
                        out.flags.append((long, None))
                    break
                out.flags.append((long, None))
        else:
            out.positional.append(tok)
        i += 1
    return out


def split_verb(argv: list[str]) -> tuple[str, list[str], list[str]]:
    """(verb, positional args after the verb, flag tokens) of a kubectl argv."""
    parsed = parse_args(argv)
    flags = [n if v is None else f"{n}={v}" for n, v in parsed.flags]
    return parsed.verb, parsed.positional[1:], flags


def flag_values(argv: list[str], *names: str) -> list[str]:
    """Values of the flags ``names`` in every spelling (``-n x``, ``-n=x``, ``--namespace=x``, ``-nx``,
    ``-An x``); short names are looked up as their long form."""
    long = {SHORTHANDS.get(n[1:], n) if len(n) == 2 else n for n in names}
    return parse_args(argv).values(*long)


def _inside(workdir: str | None, path: str) -> bool:
    if workdir is None:
        return False
    base = Path(workdir).resolve()
    return Path(base, path).resolve().is_relative_to(base)


def check(
    argv: list[str], *, phase: Phase, namespaces: list[str], workdir: str | None = None
) -> PolicyDecision:
    """Decide whether ``argv`` (without the leading ``kubectl``) may run.

    The cluster's RBAC decides what the credential may do; this check covers what RBAC cannot
    see (local files, connection overrides) and gives clear reasons for the common refusals.
    """
    if not argv:
        return PolicyDecision(False, "empty command; try e.g. `get pods -n <namespace>`")
    parsed = parse_args(argv)
    for name, _ in parsed.flags:
        if name in CONNECTION_FLAGS or name == "-s":
            shown = "-s/--server" if name == "--server" else name
            return PolicyDecision(False, f"{shown} is not allowed: the environment sets the connection")
    for name, value in parsed.flags:
        if name not in LOCAL_PATH_FLAGS:
            continue
        if value is None or value == "-":
            continue
        if "://" in value:
            return PolicyDecision(False, f"{name} URLs are refused; pass the manifest as stdin with -f -")
        path = value.split("=", 1)[-1] if name == "--from-file" and "=" in value else value
        if not _inside(workdir, path):
            return PolicyDecision(
                False,
                f"{name} may only name files in the work folder ({workdir}); use -f - with stdin for manifests",
            )
    for value in parsed.values("--output"):
        kind, _, path = value.partition("=")
        if kind.endswith("-file") and not _inside(workdir, path):
            return PolicyDecision(False, f"-o {kind} may only read a template in the work folder")
    verb, pos, flags = parsed.verb, parsed.positional[1:], [n for n, _ in parsed.flags]
    if not verb:
        return PolicyDecision(False, "no kubectl command given (e.g. `get pods -n <namespace>`)")
    if verb in FORBIDDEN_VERBS:
        return PolicyDecision(False, f"`kubectl {verb}` is refused: it {FORBIDDEN_VERBS[verb]}", verb=verb)
    if verb == "config":
        sub = pos[0] if pos else ""
        if sub in {"view", "get-contexts", "current-context"}:
            return PolicyDecision(True, argv=list(argv), verb=verb)
        return PolicyDecision(False, "`kubectl config` may only view the configuration", verb=verb)
    interactive = {"--stdin", "--tty", "--attach", "-i", "-t"}
    if verb == "run" and any(f in interactive for f in flags):
        return PolicyDecision(
            False, "`kubectl run -i/-t` is refused: it opens an interactive session", verb=verb
        )
    if verb == "logs" and parsed.has("--follow"):
        return PolicyDecision(
            False, "`kubectl logs -f` streams forever; use --tail=N or --since=10m", verb=verb
        )
    if parsed.has("--watch", "--watch-only"):
        return PolicyDecision(False, "--watch streams forever; run the command again instead", verb=verb)
    if verb not in READ_VERBS and verb not in MUTATE_VERBS:
        return PolicyDecision(False, f"unknown or unsupported kubectl command {verb!r}", verb=verb)
    mutating = verb in MUTATE_VERBS
    if verb == "rollout" and pos and pos[0] in ROLLOUT_READ:
        mutating = False
    if verb == "auth" and pos and pos[0] == "reconcile":
        mutating = True
    if verb == "diff" or verb == "wait":
        mutating = False
    if mutating and parsed.values("--dry-run")[:1] in (["client"], ["server"]):
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
    all_ns = parsed.has("--all-namespaces")
    if all_ns and mutating:
        return PolicyDecision(
            False, "mutating commands may not use --all-namespaces", verb=verb, mutating=True
        )
    out = list(argv)
    ns_given = parsed.values("--namespace")
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
    return PolicyDecision(True, argv=out, mutating=mutating, verb=verb)
