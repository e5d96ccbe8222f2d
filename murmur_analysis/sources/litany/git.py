"""A safe, fast reader of git objects through git's own plumbing.

A repository is untrusted data. Every git process started here

* runs with a scrubbed environment: no inherited ``GIT_*`` variable, no system or global
  config (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``), no terminal prompt, no
  optional locks, no replace objects, and no transport at all (``GIT_ALLOW_PROTOCOL`` names
  none, so a partial clone can never fetch a missing object over a command the repo names);
* is given ``--no-pager`` and command-line overrides of every repo-config key that could run
  a program (``core.fsmonitor``, ``core.hooksPath``, ``core.sshCommand``, ``core.pager``,
  ``diff.external``, signature verification);
* is plumbing that reads objects only (``for-each-ref``, ``rev-parse``, ``log --raw``,
  ``ls-tree``, ``cat-file --batch``): no work tree, no index, no checkout, no diff driver,
  no textconv, no hook.

The cost model: one ``git log --raw`` for the whole repository lists every commit reachable
from the branches read, each with the blobs it changed under the paths asked for
(:meth:`GitRepo.walk_columns`, parsed by :mod:`murmur_analysis.sources.litany.gitlog` into columns); each
branch is then its first-parent chain through it (:meth:`murmur_analysis.sources.litany.gitlog.Walk.chain`). One
``git cat-file --batch`` process per repository, kept running, reads every blob not read before,
batch after batch (:meth:`GitRepo.read`). Blobs are cached by object id, so a blob shared by a
thousand commits is read once.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ...core.files import file_kind, listing
from ...errors import GitError
from .gitlog import LOG_ARGS, Commit, LogParser, Walk, parse_log

__all__ = ["GitRepo", "TreeItem", "safe_env"]

_OVERRIDES = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.sshCommand=false",
    "core.pager=cat",
    "core.askPass=false",
    "core.quotePath=false",
    "diff.external=",
    "log.showSignature=false",
    "log.showRoot=true",
    "color.ui=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "protocol.allow=never",
)
_HEX = re.compile(r"\A[0-9a-f]{40}(?:[0-9a-f]{24})?\Z")


def safe_env() -> dict[str, str]:
    """The environment of every git process: the caller's, minus git's, plus the locks."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        GIT_OPTIONAL_LOCKS="0",
        GIT_NO_REPLACE_OBJECTS="1",
        GIT_ALLOW_PROTOCOL="none",
        GIT_NO_LAZY_FETCH="1",
        GIT_PAGER="cat",
        GIT_ASKPASS="false",
        SSH_ASKPASS="false",
        LC_ALL="C",
    )
    return env


@dataclass(frozen=True, slots=True)
class TreeItem:
    """One entry of a tree, as ``ls-tree`` lists it."""

    mode: str
    type: str
    oid: str
    name: str


class GitRepo:
    """Read-only access to one repository's refs, history and blobs.

    Args:
        git_dir: the repository's git directory (a bare repository, or a ``.git`` folder).

    Attributes:
        blob_reads: blobs read from git so far.
    """

    def __init__(self, git_dir: str | os.PathLike[str], git: str = "git") -> None:
        self.git_dir = Path(os.path.abspath(git_dir))
        self.git = git
        self.blob_reads = 0
        self._hazards: list[str] | None = None
        self._batch: _CatFile | None = None
        self._closer: weakref.finalize[[], GitRepo] | None = None
        self._reading = threading.RLock()  # one read of the cat-file process at a time, from any thread

    def hazards(self) -> list[str]:
        """Files of the repository git would block on: FIFOs, sockets and devices among its own files.

        git opens ``HEAD``, ``config``, ``packed-refs``, every loose ref and object files
        without checking what they are; a FIFO among them would stop it (and the load) forever.
        Every git command here refuses a repository holding one (:meth:`run`).
        """
        if self._hazards is None:
            found = [os.fspath(self.git_dir / name) for name in _PLAIN_FILES
                     if file_kind(self.git_dir / name) in _BLOCKING]
            for folder in ("refs", "objects"):
                found += _special_files(self.git_dir / folder)
            self._hazards = sorted(found)
        return self._hazards

    def run(self, *args: str, stdin: bytes | None = None) -> bytes:
        """Run one git command on this repository and return its standard output.

        Raises:
            GitError: git could not be started or exited with an error, or the repository holds
                a file git would block on (:meth:`hazards`).
        """
        self._refuse_hazards()
        try:
            done = subprocess.run(
                self._cmd(args), input=stdin, capture_output=True, env=safe_env(), cwd=os.fspath(self.git_dir),
                check=False,
            )
        except OSError as err:
            raise GitError(f"cannot run git on {self.git_dir}: {err}", hint="is git installed?") from err
        if done.returncode != 0:
            raise self._failed(args, done.stderr, done.returncode)
        return done.stdout

    def stream(self, *args: str, stdin: bytes, sink: Callable[[bytes], None]) -> None:
        """Run one git command, handing its standard output to ``sink`` piece by piece as git writes it.

        ``stdin`` is written whole before the output is read (for commands such as
        ``log --stdin`` that read all their input first).

        Raises:
            GitError: git could not be started or exited with an error, or the repository holds
                a file git would block on (:meth:`hazards`).
        """
        self._refuse_hazards()
        with tempfile.TemporaryFile() as errors:
            try:
                proc = subprocess.Popen(
                    self._cmd(args), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, env=safe_env(),
                    cwd=os.fspath(self.git_dir),
                )
            except OSError as err:
                raise GitError(f"cannot run git on {self.git_dir}: {err}", hint="is git installed?") from err
            assert proc.stdin is not None and proc.stdout is not None
            try:
                try:
                    proc.stdin.write(stdin)
                    proc.stdin.close()
                except BrokenPipeError:
                    pass  # git stopped reading: its exit status says why
                fd = proc.stdout.fileno()
                while chunk := os.read(fd, 1 << 20):
                    sink(chunk)
            except BaseException:
                proc.kill()
                raise
            finally:
                proc.stdout.close()
                code = proc.wait()
            if code != 0:
                errors.seek(0)
                raise self._failed(args, errors.read(), code)

    def _refuse_hazards(self) -> None:
        found = self.hazards()
        if found:
            raise GitError(f"{found[0]} is not a regular file: git would block on it; the repository is not read")

    def _cmd(self, args: Sequence[str]) -> list[str]:
        cmd = [self.git, "--no-pager", "--git-dir", os.fspath(self.git_dir), "--literal-pathspecs"]
        for override in _OVERRIDES:
            cmd += ["-c", override]
        return cmd + list(args)

    def _failed(self, args: Sequence[str], stderr: bytes, code: int) -> GitError:
        detail = stderr.decode("utf-8", "replace").strip().splitlines()
        return GitError(f"git {args[0]} failed on {self.git_dir}: {detail[-1] if detail else code}")

    def refs(self, prefix: str = "refs/heads/") -> dict[str, str]:
        """Every ref under ``prefix`` that names a commit, as ``full name -> commit id``, sorted by name."""
        return {name: oid for name, (oid, kind) in self.ref_kinds(prefix).items() if kind == "commit"}

    def ref_kinds(self, prefix: str = "refs/heads/") -> dict[str, tuple[str, str]]:
        """Every ref under ``prefix`` as ``full name -> (object id, object type)``, sorted by name.

        The type is git's (``commit``, ``tag``, ``blob``, ``tree``), or ``missing`` for a ref
        that holds an id of no object in the repository (a dangling ref): one such ref does not
        hide the others.
        """
        out = self.run("for-each-ref", "--format=%(objectname) %(refname)", prefix)
        listed: list[tuple[str, str]] = []
        for line in out.decode("utf-8", "surrogateescape").splitlines():
            oid, _, name = line.partition(" ")
            listed.append((name, oid))
        if not listed:
            return {}
        oids = list(dict.fromkeys(oid for _, oid in listed))
        checked = self.run("cat-file", "--batch-check=%(objectname) %(objecttype)",
                           stdin=("\n".join(oids) + "\n").encode())
        kinds: dict[str, str] = {}
        for oid, line in zip(oids, checked.decode("utf-8", "replace").splitlines(), strict=False):
            fields = line.split(" ")
            kinds[oid] = fields[1] if len(fields) == 2 and fields[0] == oid else "missing"
        return {name: (oid, kinds.get(oid, "missing")) for name, oid in sorted(listed)}

    def resolve(self, rev: str) -> str:
        """The commit id ``rev`` names (a branch, a sha, ``agents/x~3``).

        Raises:
            GitError: ``rev`` names no commit.
        """
        if not rev or "\n" in rev or "\0" in rev:
            raise GitError(f"not a revision: {rev!r}")
        self._refuse_hazards()
        try:
            out = self.run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
        except GitError as err:
            raise GitError(f"{rev!r} names no commit in {self.git_dir}") from err
        return out.decode().strip()

    def log(self, rev: str) -> list[Commit]:
        """The first-parent history of ``rev``, oldest first, each commit with its changed paths.

        One ``git log --raw`` process; merges are diffed against their first parent, the root
        commit against the empty tree.
        """
        out = self.run("log", "--first-parent", "--reverse", *LOG_ARGS, "--end-of-options", rev, "--")
        return parse_log(out)

    def walk(self, heads: Iterable[str], paths: Sequence[str] = ()) -> dict[str, Commit]:
        """Every commit reachable from ``heads`` (commit ids), by id, with its changed paths.

        One ``git log --raw`` process for all heads, each commit listed once however many
        branches hold it. Changes are against the first parent (the root commit: against the
        empty tree), as :meth:`log` gives them. With ``paths`` (folders such as
        ``"messages/"``), only changes under them are listed, but every commit still is (no
        history simplification), so a commit that changes nothing there costs one log line.
        Follow a branch with :func:`first_parent`; :meth:`walk_columns` is the same walk as columns.

        Raises:
            GitError: a head is not a full object id, or git failed (e.g. a missing object).
        """
        return {c.sha: c for c in self.walk_columns(heads, paths).commits()}

    def walk_columns(self, heads: Iterable[str], paths: Sequence[str] = (), known: Iterable[str] = ()) -> Walk:
        """The walk of :meth:`walk` as columns (follow a branch with :meth:`Walk.chain`).

        Args:
            heads: the commits to walk from.
            paths: list only the changes under these folders.
            known: commits whose history is walked already: none of it is listed (join the two
                walks with :meth:`Walk.extended` to follow a branch into it).

        Raises:
            GitError: a head is not a full object id, or git failed (e.g. a missing object).
        """
        wanted = list(dict.fromkeys(heads))
        parser = LogParser()
        if not wanted:
            return parser.finish_walk()
        skipped = [h for h in dict.fromkeys(known) if h not in wanted]
        if not all(_HEX.match(h) for h in [*wanted, *skipped]):
            raise GitError("a head to walk is not an object id")
        limit = ("--full-history", "--sparse", "--", *paths) if paths else ("--",)
        revs = "".join(f"{h}\n" for h in wanted) + "".join(f"^{h}\n" for h in skipped)
        self.stream("log", "--stdin", *LOG_ARGS, *limit, stdin=revs.encode(), sink=parser.feed)
        return parser.finish_walk()

    def ls_tree(self, rev: str, path: str) -> list[TreeItem]:
        """The entries directly inside the folder ``path`` of commit ``rev``, in tree order.

        An absent folder lists nothing.
        """
        out = self.run("ls-tree", "-z", "--full-tree", "--end-of-options", rev, "--", path.rstrip("/") + "/")
        items = []
        for record in out.split(b"\0"):
            if not record:
                continue
            meta, _, name = record.partition(b"\t")
            mode, kind, oid = meta.decode().split(" ")
            items.append(TreeItem(mode, kind, oid, name.decode("utf-8", "surrogateescape").rpartition("/")[2]))
        return items

    def read(self, names: Iterable[str]) -> dict[str, bytes | None]:
        """The contents of the given blobs (``None`` for a missing object or one not a blob).

        Every read of a repository goes through one ``git cat-file --batch`` process, started
        by the first and kept until :meth:`close`: the names are written to it and its answers
        read back, batch after batch. A name may be an object id or ``<commit>:<path>``.
        Nothing is cached here: callers keep what they parsed, keyed by object id, and never
        ask twice. Reads from several threads take turns.

        Raises:
            GitError: git could not be started or stopped answering, or the repository holds
                a file git would block on (:meth:`hazards`).
        """
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}
        if any("\n" in n for n in wanted):
            raise GitError("an object name holds a newline")
        with self._reading:
            if self._batch is None:
                self._refuse_hazards()
                self._batch = _CatFile(self._cmd(("cat-file", "--batch")), os.fspath(self.git_dir))
                self._closer = weakref.finalize(self, self._batch.close)
            try:
                found = self._batch.read(wanted)
            except BaseException:
                self.close()
                raise
            self.blob_reads += found.blobs
        return found.contents

    def close(self) -> None:
        """Stop the ``cat-file --batch`` process of :meth:`read`, if one runs (a later read starts another).

        A read under way in another thread finishes first.
        """
        with self._reading:
            batch, self._batch = self._batch, None
            if self._closer is not None:
                self._closer.detach()
                self._closer = None
        if batch is not None:
            batch.close()


@dataclass(frozen=True, slots=True)
class _Found:
    contents: dict[str, bytes | None]
    blobs: int


#: The read buffer of a cat-file process's answers.
_READ_BUFFER = 1 << 20


class _CatFile:
    """One running ``git cat-file --batch``: names written to it, objects read back in the same order."""

    def __init__(self, cmd: list[str], cwd: str) -> None:
        self._where = cwd
        self._errors = tempfile.TemporaryFile()  # noqa: SIM115 (open while git runs: closed by close())
        try:
            # A large read buffer and pipe: the reader takes git's answers in few reads, so a busy
            # thread beside it (the step records being read) hands it the interpreter seldom, not
            # once per 64 KiB (each wake-up can wait a whole switch interval for it).
            self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._errors,
                                          env=safe_env(), cwd=cwd, bufsize=_READ_BUFFER)
            if self._proc.stdout is not None:
                _grow_pipe(self._proc.stdout.fileno())
        except OSError as err:
            self._errors.close()
            raise GitError(f"cannot run git on {cwd}: {err}", hint="is git installed?") from err

    def read(self, names: Sequence[str]) -> _Found:
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None
        request = ("\n".join(names) + "\n").encode("utf-8", "surrogateescape")
        writer = threading.Thread(target=_write, args=(proc.stdin, request), daemon=True)
        writer.start()  # git answers while it is still being asked: neither side waits on a full pipe
        try:
            return self._answers(names)
        except BaseException:
            proc.kill()  # the writer is never left blocked on a pipe no one reads
            raise
        finally:
            writer.join()

    def _answers(self, names: Sequence[str]) -> _Found:
        out = self._proc.stdout
        assert out is not None
        found: dict[str, bytes | None] = {}
        blobs = 0
        for name in names:
            header = out.readline().split(b" ")
            if not header[-1].endswith(b"\n"):
                raise GitError(f"git cat-file failed on {self._where}: {self._stderr()}")
            if len(header) != 3 or header[-1] == b"missing\n":
                found[name] = None
                continue
            size = int(header[2])
            data = out.read(size + 1)
            if len(data) != size + 1:
                raise GitError(f"git cat-file failed on {self._where}: {self._stderr()}")
            found[name] = data[:size] if header[1] == b"blob" else None
            blobs += header[1] == b"blob"
        return _Found(found, blobs)

    def _stderr(self) -> str:
        self._errors.seek(0)
        detail = self._errors.read().decode("utf-8", "replace").strip().splitlines()
        return detail[-1] if detail else "no answer"

    def close(self) -> None:
        proc = self._proc
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        self._errors.close()


def _grow_pipe(fd: int) -> None:
    """Let a pipe hold :data:`_READ_BUFFER` bytes, so its reader wakes once per buffer (Linux; elsewhere as it is)."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _READ_BUFFER)
    except (ImportError, AttributeError, OSError):
        pass


def _write(pipe: IO[bytes], data: bytes) -> None:
    try:
        pipe.write(data)
        pipe.flush()
    except (BrokenPipeError, ValueError):
        pass  # git stopped reading: the reader sees why


#: Files git opens in a git directory, when they exist.
_PLAIN_FILES = ("HEAD", "config", "packed-refs", "shallow", "commondir", "info/grafts", "objects/info/alternates",
                "objects/info/http-alternates", "objects/info/packs", "objects/info/commit-graph")
_BLOCKING = frozenset({"FIFO", "socket", "character device", "block device", "special file"})


def _special_files(folder: Path) -> list[str]:
    """FIFOs, sockets and devices anywhere under ``folder`` (links to them included; links not followed into)."""
    found: list[str] = []
    for entry in listing(folder, None):
        try:
            if entry.is_dir(follow_symlinks=False):
                found += _special_files(Path(entry.path))
            elif not entry.is_file(follow_symlinks=False) and file_kind(entry.path) in _BLOCKING:
                found.append(entry.path)
        except OSError:
            continue
    return found
