"""What an ad-hoc container of a utility image does: a small, honest interpreter of common shell forms.

``kubectl run tmp --image=busybox -- sh -c 'echo hi; sleep 30; exit 3'`` or ``kubectl debug node/x
--image=busybox`` start a utility image (busybox, alpine, ubuntu, debian, curlimages/curl,
nicolaka/netshoot: ``shell:`` in ``scenarios/apps/images.yaml``) with a command that is not an app
service. The twin runs that command on the virtual clock instead of pretending it is a server:

- the argv is Docker's: ``command`` + ``args``, else the image ENTRYPOINT + ``args``, else
  ENTRYPOINT + CMD (busybox: ``sh``, ubuntu: ``/bin/bash``...);
- a shell without ``-c`` and without stdin (``stdin: true``, as ``kubectl run -i`` sets) reads end
  of file and exits 0 at once, as on a real node; with stdin it waits;
- ``sh -c SCRIPT`` / ``bash -c`` / ``zsh -c`` and script files from mounted ConfigMaps/Secrets run:
  lists with ``;`` ``&&`` ``||`` and newlines, ``cmd &`` + ``wait``, ``while true; do ...; done``
  (and ``while :``, ``until false``), ``VAR=value``, ``$VAR`` ``${VAR}`` ``$?`` expansion, quotes,
  redirections to ``/dev/null``, ``2>&1`` and to files (kept in memory for a later ``cat``);
- built-ins: ``exit N``, ``sleep N|Ns|Nm|Nh|Nd|infinity``, ``echo [-n] [-e]``, ``printf`` (``%s``,
  ``%d``, ``\\n``), ``true``, ``false``, ``:``, ``cat FILE`` (mounted ConfigMap/Secret/projected
  files, e.g. the service-account ``namespace``; files the script wrote), ``env``/``printenv
  [VAR]``, ``hostname``, ``tail -f`` (waits forever), ``trap`` (signals do not matter here),
  ``set -e``, ``cd``/``export``/``unset`` (accepted), ``exec CMD``;
- a command the image does not have: exit 127 with the shell's own wording (``sh: foo: not
  found``, ``bash: line 1: foo: command not found``, dash's ``sh: 1: foo: not found``);
- a command the image has but the twin does not simulate (``wget``, ``nslookup``, ``ls``...) and
  syntax beyond the above (pipes, ``if``, ``for``, ``$(...)``): an honest ``<cmd>: not simulated by
  the twin`` on stderr and exit 126, never a fake success.

Everything is a pure function of the argv, the environment and the mounted files, so the verdict
(kubelet) and ``kubectl logs`` (telemetry) compute the same program.
"""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..app.model import Image

Obj = dict[str, Any]

NOT_SIMULATED = 126
NOT_FOUND = 127
MIN_LOOP_PERIOD_S = 1.0
"""A ``while true`` loop without a sleep would print as fast as the CPU allows; the twin prints one
iteration per second (a documented simplification)."""
MAX_STEPS = 10_000

SHELLS = {"sh", "ash", "bash", "dash", "zsh"}
EXECUTABLES = {"echo", "sleep", "true", "false", "cat", "env", "printenv", "hostname", "tail", "printf"}
"""Simulated commands that are programs in the image (the others are shell built-ins)."""


def _words(text: str) -> set[str]:
    return set(text.split())


# commands each image family really has but the twin does not simulate
_BUSYBOX_TOOLS = _words(
    """[ [[ awk base64 basename chmod chown cp cut date dd df diff dirname dmesg du expr find free grep
    gunzip gzip head hexdump id ifconfig ip kill killall less ln ls md5sum mkdir mktemp more mount mv
    nc netstat nohup nslookup od ping ping6 ps pwd readlink realpath rm rmdir route sed seq sha1sum
    sha256sum sort stat stty su sync tar tee telnet test time timeout top touch tr traceroute tty
    uname uniq unzip uptime vi watch wc wget which whoami xargs yes"""
)
_GNU_TOOLS = _words(
    """[ [[ awk base64 basename cat chmod chown cp cut date dd df diff dirname du expr find free grep
    gunzip gzip head id kill ln ls md5sum mkdir mktemp more mount mv nohup od ps pwd readlink realpath
    rm rmdir sed seq sha1sum sha256sum sort stat stty su sync tar tee test timeout top touch tr tty
    uname uniq uptime wc which whoami xargs yes apt apt-get dpkg perl"""
)
TOOLS: dict[str, set[str]] = {
    "busybox": _BUSYBOX_TOOLS,
    "alpine": _BUSYBOX_TOOLS | {"apk"},
    "curl": _BUSYBOX_TOOLS | {"apk", "curl"},
    "debian": _GNU_TOOLS,
    "netshoot": _BUSYBOX_TOOLS
    | _GNU_TOOLS
    | _words(
        """curl dig drill host nmap ncat socat tcpdump tshark iperf iperf3 ss iftop mtr fping httpie
        jq openssl ethtool conntrack iptables nft tcptraceroute ipvsadm bash zsh"""
    ),
}
# which shells each family has (anything else named as a shell is "not found")
_SHELLS_OF = {
    "busybox": {"sh", "ash"},
    "alpine": {"sh", "ash"},
    "curl": {"sh", "ash"},
    "debian": {"sh", "dash", "bash"},
    "netshoot": {"sh", "ash", "bash", "zsh"},
}


@dataclass(frozen=True)
class Program:
    """What the container's process does, in seconds after it starts."""

    lines: tuple[tuple[float, str], ...] = ()
    """Output lines (stdout and stderr, as the container log has them) before any loop."""
    exit_code: int | None = 0
    """None: it never exits on its own (``sleep infinity``, a loop, a shell waiting on stdin)."""
    runtime_s: float = 0.0
    """When it exits (``exit_code`` set), or when ``loop`` starts."""
    loop: tuple[tuple[float, str], ...] = ()
    """Lines of one iteration of an endless loop (offsets inside the iteration)."""
    period_s: float = 0.0
    """Length of one loop iteration."""

    def lines_between(self, t0: float, t1: float, cap: int = 100_000) -> list[tuple[float, str]]:
        """Output lines with offsets in [t0, t1)."""
        out = [(t, s) for t, s in self.lines if t0 <= t < t1]
        if self.loop and self.period_s > 0:
            first = max(0, int((t0 - self.runtime_s) // self.period_s))
            k = first
            while len(out) < cap:
                base = self.runtime_s + k * self.period_s
                if base >= t1:
                    break
                for off, s in self.loop:
                    if t0 <= base + off < t1:
                        out.append((base + off, s))
                k += 1
        return out


# ---------------------------------------------------------------------- argv and entry point
def image_argv(img: Image, container: Obj) -> list[str]:
    """Docker's rule: ``command`` replaces ENTRYPOINT (and drops CMD), ``args`` replace CMD."""
    command = [str(x) for x in container.get("command") or []]
    args = [str(x) for x in container.get("args") or []]
    if command:
        return command + args
    entry = list(img.entrypoint)
    return entry + (args if args else list(img.cmd))


def container_program(
    img: Image | None, pod: Obj, container: Obj, env: Mapping[str, str], files: Mapping[str, str]
) -> Program | None:
    """The program a container of a utility image runs, or None for any other image."""
    if img is None or not img.shell:
        return None
    env2 = {"HOSTNAME": str(pod.get("metadata", {}).get("name", "")), **env}
    return _program(
        img.shell,
        tuple(image_argv(img, container)),
        bool(container.get("stdin")),
        tuple(env2.items()),
        tuple(files.items()),
    )


@functools.lru_cache(maxsize=4096)
def _program(
    flavor: str,
    argv_t: tuple[str, ...],
    stdin: bool,
    env_items: tuple[tuple[str, str], ...],
    files_items: tuple[tuple[str, str], ...],
) -> Program:
    """:func:`container_program` of everything it reads: a kubelet asks again for every container
    of every pod at each change, and the same script always runs the same way (a frozen answer)."""
    argv = list(argv_t)
    run = _Run(flavor, dict(env_items), dict(files_items))
    if not argv:
        return Program(exit_code=0)
    if not _flavor_has_executable(flavor, argv[0]):
        return Program(exit_code=128)  # the runtime cannot start it (StartError): no output
    name = argv[0].rsplit("/", 1)[-1]
    if name in SHELLS:
        rest = argv[1:]
        opts = [a for a in rest if a.startswith("-") and a != "-"]
        if "-c" in rest or any(o.startswith("-") and "c" in o[1:] and not o.startswith("--") for o in opts):
            i = next(i for i, a in enumerate(rest) if a.startswith("-") and "c" in a[1:])
            script = rest[i + 1] if i + 1 < len(rest) else ""
            run.shell = name
            run.script(script)
        else:
            files_args = [a for a in rest if not a.startswith("-")]
            run.shell = name
            if files_args:
                path = files_args[0]
                text = run.fs.get(path)
                if text is None:
                    run.err(_no_such_script(flavor, name, path))
                    run.exit_code = 127 if name in ("bash", "zsh") else 2
                else:
                    run.script(text)
            elif stdin:
                run.forever_ = True  # waits for input on its terminal
            else:
                run.exit_code = 0  # reads end of file and exits
    else:
        run.shell = "sh"
        run.exec_argv([_W.lit(a) for a in argv], exec_form=True)
    return run.program()


def has_executable(img: Image, name: str) -> bool:
    """Whether a utility image has ``name`` as a program (an exec-form ``command`` can start it)."""
    return _flavor_has_executable(img.shell or "", name)


def _flavor_has_executable(flavor: str, name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return base in EXECUTABLES or base in _SHELLS_OF.get(flavor, set()) or base in TOOLS.get(flavor, set())


def _no_such_script(flavor: str, shell: str, path: str) -> str:
    if shell == "bash":
        return f"bash: {path}: No such file or directory"
    if shell == "zsh":
        return f"zsh: no such file or directory: {path}"
    if flavor == "debian":
        return f"sh: 0: cannot open {path}: No such file"
    return f"sh: can't open '{path}': No such file or directory"


def mounted_paths(pod: Obj, container: Obj, store: Any, namespace: str) -> dict[str, str]:
    """Files the container sees from ConfigMap, Secret and projected volumes: absolute path → text."""
    vols = {v.get("name"): v for v in pod.get("spec", {}).get("volumes") or []}
    out: dict[str, str] = {}
    for m in container.get("volumeMounts") or []:
        vol = vols.get(m.get("name")) or {}
        mount = str(m.get("mountPath") or "").rstrip("/")
        data: dict[str, str] = {}
        src: Obj | None = None
        if vol.get("configMap"):
            src = vol["configMap"]
            data = _source_files(store, namespace, "configMap", src)
        elif vol.get("secret"):
            src = vol["secret"]
            data = _source_files(store, namespace, "secret", src)
        elif vol.get("projected"):
            # e.g. the service-account volume: ca.crt and namespace (the token itself is not
            # simulated: `cat token` finds no file)
            src = {}
            for part in vol["projected"].get("sources") or []:
                for kind in ("configMap", "secret"):
                    if part.get(kind):
                        data.update(_source_files(store, namespace, kind, part[kind]))
                for item in (part.get("downwardAPI") or {}).get("items") or []:
                    fp = (item.get("fieldRef") or {}).get("fieldPath")
                    if fp == "metadata.namespace":
                        data[str(item.get("path"))] = namespace
                    elif fp == "metadata.name":
                        data[str(item.get("path"))] = str(pod.get("metadata", {}).get("name", ""))
        if src is None:
            continue
        sub = m.get("subPath")
        if sub:
            if sub in data:
                out[mount] = data[sub]
            continue
        for k, v in data.items():
            out[f"{mount}/{k}"] = v
    return out


def _source_files(store: Any, namespace: str, kind: str, src: Obj) -> dict[str, str]:
    """Files of one ConfigMap or Secret volume source (``items`` pick and rename keys)."""
    from ..app.cluster import CONFIGMAPS, SECRETS

    data: dict[str, str] = {}
    if kind == "configMap":
        obj = store.get(CONFIGMAPS, namespace, str(src.get("name", "")))
        data = {k: str(v) for k, v in ((obj or {}).get("data") or {}).items()}
    else:
        obj = store.get(SECRETS, namespace, str(src.get("secretName") or src.get("name") or ""))
        for k, v in ((obj or {}).get("data") or {}).items():
            try:
                data[k] = base64.b64decode(str(v)).decode("utf-8", "replace")
            except (ValueError, TypeError):
                continue
        for k, v in ((obj or {}).get("stringData") or {}).items():
            data[k] = str(v)
    items = src.get("items")
    if items:
        data = {str(i.get("path")): data[i.get("key")] for i in items if i.get("key") in data}
    return data


# ---------------------------------------------------------------------- lexer
@dataclass
class _W:
    """A word: parts of (text, single-quoted), expanded at run time."""

    parts: list[tuple[str, bool]] = field(default_factory=list)

    @staticmethod
    def lit(s: str) -> _W:
        return _W([(s, True)])

    def raw(self) -> str:
        return "".join(p for p, _ in self.parts)

    def add(self, text: str, single: bool) -> None:
        """Append text; unquoted and double-quoted text merge (``$VAR`` may span them)."""
        if self.parts and not single and not self.parts[-1][1]:
            self.parts[-1] = (self.parts[-1][0] + text, False)
        else:
            self.parts.append((text, single))


class _Unsupported(Exception):
    pass


_OPS = ("&&", "||", ";;", ">>", "2>&1", "1>&2", ">&2", "2>", "&>", ";", "&", "|", ">", "<", "\n", "(", ")")


def _lex(script: str) -> list[_W | str]:
    """Words (``_W``) and operators (``str``)."""
    out: list[_W | str] = []
    i, n = 0, len(script)
    cur: _W | None = None

    def flush() -> None:
        nonlocal cur
        if cur is not None:
            out.append(cur)
            cur = None

    while i < n:
        c = script[i]
        if c in " \t":
            flush()
            i += 1
            continue
        if c == "#" and cur is None:
            while i < n and script[i] != "\n":
                i += 1
            continue
        if c == "\\" and i + 1 < n:
            if script[i + 1] == "\n":
                i += 2
                continue
            cur = cur or _W()
            cur.add(script[i + 1], True)
            i += 2
            continue
        if c == "'":
            j = script.find("'", i + 1)
            if j < 0:
                raise _Unsupported("unterminated quoted string")
            cur = cur or _W()
            cur.add(script[i + 1 : j], True)
            i = j + 1
            continue
        if c == '"':
            j = i + 1
            buf = []
            while j < n and script[j] != '"':
                if script[j] == "\\" and j + 1 < n and script[j + 1] in '"\\$`':
                    buf.append(script[j + 1])
                    j += 2
                    continue
                buf.append(script[j])
                j += 1
            if j >= n:
                raise _Unsupported("unterminated quoted string")
            text = "".join(buf)
            if "$(" in text or "`" in text:
                raise _Unsupported("command substitution")
            cur = cur or _W()
            cur.add(text, False)
            i = j + 1
            continue
        if c == "`" or script.startswith("$(", i):
            raise _Unsupported("command substitution")
        op = next((o for o in _OPS if script.startswith(o, i)), None)
        if op is not None and not (op in ("2>", "2>&1") and cur is not None):
            flush()
            out.append(op)
            i += len(op)
            continue
        cur = cur or _W()
        cur.add(c, False)
        i += 1
    flush()
    return out


_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*)|([?$#0-9]))")


# ---------------------------------------------------------------------- the interpreter
class _Done(Exception):
    pass


class _Forever(Exception):
    pass


@dataclass
class _Run:
    flavor: str
    env: dict[str, str]
    fs: dict[str, str]
    shell: str = "sh"
    t: float = 0.0
    status: int = 0
    lines: list[tuple[float, str]] = field(default_factory=list)
    exit_code: int | None = None
    loop: tuple[tuple[float, str], ...] = ()
    period: float = 0.0
    bg_end: float = 0.0
    bg_forever: bool = False
    steps: int = 0
    lineno: int = 1
    forever_: bool = False
    errexit: bool = False
    _partial: str = ""
    _sink: list[tuple[float, str]] | None = None

    # --- output
    def out(self, text: str, *, newline: bool = True) -> None:
        pieces = (self._partial + text + ("\n" if newline else "")).split("\n")
        self._partial = pieces.pop()
        dest = self._sink if self._sink is not None else self.lines
        for p in pieces:
            dest.append((self.t, p))

    def err(self, text: str) -> None:
        (self._sink if self._sink is not None else self.lines).append((self.t, text))

    def finish(self, code: int) -> None:
        if self.exit_code is None:
            self.exit_code = code
        raise _Done

    def forever(self) -> None:
        raise _Forever

    def program(self) -> Program:
        if self._partial:
            self.lines.append((self.t, self._partial))
            self._partial = ""
        lines = tuple(sorted(self.lines, key=lambda e: e[0]))
        if self.loop or self.period:
            return Program(
                lines=lines, exit_code=None, runtime_s=self.t, loop=self.loop, period_s=self.period
            )
        if self.forever_ or (self.exit_code is None and self.bg_forever):
            return Program(lines=lines, exit_code=None, runtime_s=self.t)
        return Program(
            lines=lines, exit_code=self.status if self.exit_code is None else self.exit_code, runtime_s=self.t
        )

    # --- entry points
    def script(self, text: str) -> None:
        try:
            try:
                toks = _lex(text)
                self.exec_list(toks)
            except _Unsupported as e:
                self.err(f"{self.shell}: {e}: not simulated by the twin")
                self.finish(NOT_SIMULATED)
            self.finish(self.status)
        except _Done:
            pass
        except _Forever:
            self.forever_ = True

    def exec_argv(self, words: list[_W], *, exec_form: bool = False) -> None:
        try:
            self.simple(words, exec_form=exec_form)
            self.finish(self.status)
        except _Done:
            pass
        except _Forever:
            self.forever_ = True

    # --- lists
    def exec_list(self, toks: Sequence[_W | str]) -> None:
        i = 0
        toks = list(toks)
        while i < len(toks):
            tok = toks[i]
            if tok in (";", "\n"):
                if tok == "\n":
                    self.lineno += 1
                i += 1
                continue
            if isinstance(tok, _W) and tok.raw() in ("while", "until") and tok.parts[0][1] is False:
                i = self._loop(toks, i)
                continue
            if isinstance(tok, _W) and tok.raw() in ("if", "for", "case", "function", "select", "{", "}"):
                raise _Unsupported(f"'{tok.raw()}'")
            j = i
            while j < len(toks) and toks[j] not in (";", "\n", "&"):
                j += 1
            background = j < len(toks) and toks[j] == "&"
            if background:
                self._background(toks[i:j])
            else:
                self.and_or(toks[i:j])
            i = j + 1

    def _background(self, toks: Sequence[_W | str]) -> None:
        saved = (self.t, self.status)
        try:
            self.and_or(toks)
            self.bg_end = max(self.bg_end, self.t)
        except _Forever:
            self.bg_forever = True
        except _Done:  # `exit` in a background job ends only that job
            self.exit_code = None
            self.bg_end = max(self.bg_end, self.t)
        self.t, self.status = saved[0], 0

    def and_or(self, toks: Sequence[_W | str]) -> None:
        segs: list[tuple[str, list[_W | str]]] = [("", [])]
        for tok in toks:
            if tok in ("&&", "||"):
                segs.append((str(tok), []))
            else:
                segs[-1][1].append(tok)
        ran_last = False
        for k, (op, seg) in enumerate(segs):
            if op == "&&" and self.status != 0:
                continue
            if op == "||" and self.status == 0:
                continue
            if "|" in seg:
                raise _Unsupported("pipelines")
            if "(" in seg or ")" in seg:
                raise _Unsupported("subshells")
            self.command(seg)
            ran_last = k == len(segs) - 1
        if self.errexit and ran_last and self.status != 0:  # `set -e`: a failing command ends it
            self.finish(self.status)

    def _loop(self, toks: list[_W | str], i: int) -> int:
        raw = [t.raw() if isinstance(t, _W) else "" for t in toks]
        kind = raw[i]
        # find `do` and the matching `done`
        do = next((k for k in range(i + 1, len(toks)) if raw[k] == "do"), None)
        if do is None:
            raise _Unsupported("loop without do")
        depth, end = 0, None
        for k in range(do + 1, len(toks)):
            w = toks[k]
            if isinstance(w, _W) and w.raw() in ("while", "until", "for"):
                depth += 1
            if isinstance(w, _W) and w.raw() == "done":
                if depth == 0:
                    end = k
                    break
                depth -= 1
        if end is None:
            raise _Unsupported("loop without done")
        cond = [x.raw() for x in toks[i + 1 : do] if isinstance(x, _W)]
        endless = (kind == "while" and cond in (["true"], [":"], ["/bin/true"])) or (
            kind == "until" and cond in (["false"], ["/bin/false"])
        )
        if not endless:
            raise _Unsupported(f"'{kind} {' '.join(cond)}' loops")
        body = toks[do + 1 : end]
        if any(isinstance(w, _W) and w.raw() in ("break", "continue") for w in body):
            raise _Unsupported("break/continue")
        start = self.t
        sink: list[tuple[float, str]] = []
        outer, self._sink = self._sink, sink
        try:
            self.exec_list(body)
        finally:
            self._sink = outer
        # the first iteration ran (an `exit` or a forever-sleep inside raises and ends it all)
        period = self.t - start
        if period < MIN_LOOP_PERIOD_S:
            period = MIN_LOOP_PERIOD_S
        (outer if outer is not None else self.lines).extend(sink)
        self.loop = tuple((t - start, s) for t, s in sink)
        self.period = period
        self.t = start + period
        raise _Forever

    # --- one command
    def _expand(self, w: _W) -> str:
        out = []
        for text, single in w.parts:
            if single:
                out.append(text)
                continue

            def sub(m: re.Match[str]) -> str:
                name = m.group(1) or m.group(2)
                if name:
                    return self.env.get(name, "")
                sym = m.group(3)
                if sym == "?":
                    return str(self.status)
                if sym == "$":
                    return "1"
                if sym == "#":
                    return "0"
                return self.shell if sym == "0" else ""

            out.append(_VAR.sub(sub, text))
        return "".join(out)

    def command(self, seg: Sequence[_W | str]) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _Unsupported("scripts this long")
        words: list[_W] = []
        redirs: list[tuple[str, str]] = []
        k = 0
        seg = list(seg)
        while k < len(seg):
            tok = seg[k]
            if isinstance(tok, str):
                if tok in ("2>&1", "1>&2", ">&2"):
                    redirs.append((tok, ""))
                    k += 1
                    continue
                if tok in (">", ">>", "2>", "&>", "<"):
                    if k + 1 >= len(seg) or not isinstance(seg[k + 1], _W):
                        raise _Unsupported("redirection syntax")
                    target = seg[k + 1]
                    assert isinstance(target, _W)
                    redirs.append((tok, self._expand(target)))
                    k += 2
                    continue
                raise _Unsupported(f"'{tok}'")
            words.append(tok)
            k += 1
        # assignments before the command
        assigns = []
        while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0].raw()):
            name, _, _ = words[0].raw().partition("=")
            value = self._expand(words[0])[len(name) + 1 :]
            assigns.append((name, value))
            words = words[1:]
        if not words:
            for name, value in assigns:
                self.env[name] = value
            self.status = 0
            return
        if not redirs:
            self.simple(words)
            return
        sink: list[tuple[float, str]] = []
        outer, self._sink = self._sink, sink
        try:
            self.simple(words)
        finally:
            self._sink = outer
        self._redirect(sink, redirs)

    def _redirect(self, produced: list[tuple[float, str]], redirs: list[tuple[str, str]]) -> None:
        dest = self._sink if self._sink is not None else self.lines
        for op, target in redirs:
            if op == "<":
                continue
            if target == "/dev/null" and op in (">", ">>", "&>"):
                return
            if target == "/dev/null" and op == "2>":
                continue  # stdout and stderr are not told apart: keep the output
            if op in (">", ">>", "&>") and target:
                text = "".join(s + "\n" for _, s in produced)
                self.fs[target] = (self.fs.get(target, "") if op == ">>" else "") + text
                return
        dest.extend(produced)

    def simple(self, words: list[_W], *, exec_form: bool = False) -> None:
        argv = [self._expand(w) for w in words]
        name = argv[0]
        base = name.rsplit("/", 1)[-1]
        args = argv[1:]
        builtin = getattr(self, f"_b_{base.replace('-', '_')}", None) if base not in ("",) else None
        if base == ":":
            builtin = self._b_true
        if builtin is not None:
            builtin(args)
            return
        if base in SHELLS and base in _SHELLS_OF.get(self.flavor, set()):
            if "-c" in args:
                i = args.index("-c")
                inner = _Run(self.flavor, dict(self.env), self.fs, shell=base, t=self.t)
                inner.script(args[i + 1] if i + 1 < len(args) else "")
                self.lines.extend(inner.lines) if self._sink is None else self._sink.extend(inner.lines)
                if inner.forever_ or inner.exit_code is None:
                    self.forever()
                self.t, self.status = inner.t, inner.exit_code or 0
                return
            raise _Unsupported(f"nested interactive {base}")
        if base in TOOLS.get(self.flavor, set()):
            self.err(f"{self.shell}: {base}: not simulated by the twin")
            self.status = NOT_SIMULATED
            return
        if exec_form:
            # the image has no such executable: the runtime cannot start it (checked in containers.py)
            self.err(f"exec {name}: not found")
            self.status = NOT_FOUND
            return
        self.err(self._not_found(name))
        self.status = NOT_FOUND

    def _not_found(self, name: str) -> str:
        if self.shell == "bash":
            return f"bash: line {self.lineno}: {name}: command not found"
        if self.shell == "zsh":
            return f"zsh:{self.lineno}: command not found: {name}"
        if self.flavor == "debian" or self.shell == "dash":
            return f"sh: {self.lineno}: {name}: not found"
        return f"sh: {name}: not found"

    # --- built-ins
    def _b_exit(self, args: list[str]) -> None:
        code = self.status
        if args:
            try:
                code = int(args[0]) & 0xFF
            except ValueError:
                self.err(f"{self.shell}: exit: Illegal number: {args[0]}")
                code = 2
        self.finish(code)

    def _b_true(self, args: list[str]) -> None:
        self.status = 0

    def _b_false(self, args: list[str]) -> None:
        self.status = 1

    def _b_trap(self, args: list[str]) -> None:
        self.status = 0

    def _b_set(self, args: list[str]) -> None:
        """``set -e`` stops at the first failing command; ``-x``, ``-u``, ``-o pipefail`` are accepted."""
        for a in args:
            if a.startswith(("-", "+")) and "e" in a[1:] and a[1:].isalpha():
                self.errexit = a.startswith("-")
        self.status = 0

    def _b_cd(self, args: list[str]) -> None:
        self.status = 0

    def _b_unset(self, args: list[str]) -> None:
        for a in args:
            self.env.pop(a, None)
        self.status = 0

    def _b_wait(self, args: list[str]) -> None:
        if self.bg_forever:
            self.forever()
        self.t = max(self.t, self.bg_end)
        self.status = 0

    def _b_sleep(self, args: list[str]) -> None:
        if not args:
            if self.flavor == "debian":
                self.err("sleep: missing operand")
                self.err("Try 'sleep --help' for more information.")
            else:
                self.err("Usage: sleep [N]...")
            self.status = 1
            return
        total = 0.0
        for a in args:
            if a in ("infinity", "inf", "INFINITY"):
                self.forever()
            m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)([smhd]?)", a)
            if m is None:
                self.err(
                    f"sleep: invalid number '{a}'"
                    if self.flavor != "debian"
                    else f"sleep: invalid time interval '{a}'"
                )
                self.status = 1
                return
            total += float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
        self.t += total
        self.status = 0

    def _b_echo(self, args: list[str]) -> None:
        newline, escapes = True, False
        while args and re.fullmatch(r"-[neE]+", args[0]):
            newline = newline and "n" not in args[0]
            escapes = escapes or "e" in args[0]
            args = args[1:]
        text = " ".join(args)
        if escapes:
            text = _escapes(text)
        self.out(text, newline=newline)
        self.status = 0

    def _b_printf(self, args: list[str]) -> None:
        if not args:
            self.err("printf: usage: printf format [arguments]")
            self.status = 2
            return
        fmt, rest = _escapes(args[0]), args[1:]
        n_specs = len(re.findall(r"%[sd]", fmt))
        chunks = []
        while True:
            take, rest = rest[:n_specs], rest[n_specs:]
            chunks.append(_format(fmt, take))
            if not rest or n_specs == 0:
                break
        self.out("".join(chunks), newline=False)
        self.status = 0

    def _b_cat(self, args: list[str]) -> None:
        self.status = 0
        for path in [a for a in args if not a.startswith("-") or a == "-"]:
            if path == "-":
                continue
            text = self.fs.get(path)
            if text is None:
                self.err(
                    f"cat: can't open '{path}': No such file or directory"
                    if self.flavor in ("busybox", "alpine", "curl")
                    else f"cat: {path}: No such file or directory"
                )
                self.status = 1
                continue
            self.out(text, newline=False)

    def _b_env(self, args: list[str]) -> None:
        if args:
            raise _Unsupported("env with arguments")
        for k in sorted(self.env):
            self.out(f"{k}={self.env[k]}")
        self.status = 0

    def _b_printenv(self, args: list[str]) -> None:
        if not args:
            self._b_env([])
            return
        self.status = 0
        for a in args:
            if a in self.env:
                self.out(self.env[a])
            else:
                self.status = 1

    def _b_hostname(self, args: list[str]) -> None:
        if args:
            raise _Unsupported("hostname with arguments")
        self.out(self.env.get("HOSTNAME", ""))
        self.status = 0

    def _b_tail(self, args: list[str]) -> None:
        if "-f" in args or "-F" in args:
            self.forever()
        raise _Unsupported("tail")

    def _b_exec(self, args: list[str]) -> None:
        if not args:
            self.status = 0
            return
        self.simple([_W.lit(a) for a in args])
        self.finish(self.status)

    def _b_export(self, args: list[str]) -> None:
        for a in args:
            name, eq, value = a.partition("=")
            if eq:
                self.env[name] = value
        self.status = 0


def _format(fmt: str, args: list[str]) -> str:
    it = iter(args)

    def one(m: re.Match[str]) -> str:
        if m.group(0) == "%%":
            return "%"
        return next(it, "" if m.group(0) == "%s" else "0")

    return re.sub(r"%%|%[sd]", one, fmt)


def _escapes(text: str) -> str:
    return text.replace("\\n", "\n").replace("\\t", "\t").replace("\\\\", "\\")
