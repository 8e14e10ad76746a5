"""The pinned corpora: reading corpus.json and keeping frozen checkouts in the cache.

A checkout is a single commit on `main` holding the pinned tree, dated 2000-01-01 with
every mtime at that instant, so that no recency signal a finder might use drifts with
the calendar. It is built in a temporary sibling folder and renamed into place under a
lock (an entry of recall.cache, see checkout_entry), so an interrupted or concurrent
fetch never leaves a checkout a later run trusts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import git
import orjson
import platformdirs

from recall.cache import FolderEntry, reporter, sole_user
from recall.errors import RecallError
from recall.files import read_input
from recall.inputs.languages import LANGUAGES
from recall.inputs.sides import SIDES, TUNE, Side

FROZEN_DATE = "2000-01-01T00:00:00Z"
FROZEN_EPOCH = 946684800
FROZEN_IDENTITY = {
    "GIT_AUTHOR_NAME": "recall",
    "GIT_AUTHOR_EMAIL": "recall@localhost",
    "GIT_AUTHOR_DATE": FROZEN_DATE,
    "GIT_COMMITTER_NAME": "recall",
    "GIT_COMMITTER_EMAIL": "recall@localhost",
    "GIT_COMMITTER_DATE": FROZEN_DATE,
}
PIN_REF = "refs/recall/pin"
MARKER = "recall-pin.json"

URL_SCHEMES = ("https", "http", "ssh", "git", "file")
_SAFE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
_SHA = re.compile(r"[0-9a-f]{40}")
_SCP_URL = re.compile(r"[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/].*")


@dataclass(frozen=True)
class Pin:
    name: str
    url: str
    sha: str
    language: str
    # Its side of the split (recall/inputs/sides.py). A pin without the field predates the
    # rule and is `tune`; `recall pin` writes it, puts a new corpus on the holdout side
    # and never moves a pin's side.
    split: Side = TUNE

    def as_json(self) -> dict[str, str]:
        """The pin as corpus.json holds it."""
        return {**self.identity(), "split": self.split}

    def identity(self) -> dict[str, str]:
        """What the checkout, and so every answer, depends on: the keys of kept indexes
        and results hold this, not the side, which changes no answer."""
        return {"url": self.url, "sha": self.sha, "language": self.language}


@dataclass(frozen=True)
class Checkout:
    pin: Pin
    path: Path

    @property
    def tree(self) -> str:
        """The pinned tree id, as recorded when the checkout was built (fetch has checked
        the marker's shape before it hands out a Checkout)."""
        recorded = read_marker(self.path / ".git" / MARKER)
        if recorded is None:
            raise RecallError(f"checkout {self.path}: its marker {MARKER} is unreadable")
        return recorded["tree"]


def load_pins(path: Path) -> dict[str, Pin]:
    """Read and validate corpus.json; every problem names the file, the repo and the field."""
    try:
        text = read_input(path).decode("utf-8")
    except UnicodeDecodeError:
        raise RecallError(f"{path}: not UTF-8") from None

    def no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
        seen: dict[str, object] = {}
        for key, value in pairs:
            if key in seen:
                raise RecallError(f"{path}: duplicate key {key!r}")
            seen[key] = value
        return seen

    # The standard library's parser, because orjson silently keeps the last duplicate key.
    try:
        data = json.loads(text, object_pairs_hook=no_duplicates)
    except json.JSONDecodeError as exc:
        raise RecallError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    except RecursionError:  # the standard library's parser recurses per nesting level
        raise RecallError(f"{path}: not JSON: nested too deeply") from None
    if not isinstance(data, dict) or not data:
        raise RecallError(f"{path}: expected an object mapping repo names to pins")
    return {name: validate_pin(path, name, fields) for name, fields in data.items()}


def validate_pin(path: Path, name: str, fields: object) -> Pin:
    where = f"{path}: repo {name!r}"
    if not _SAFE_NAME.fullmatch(name) or name in (".", "..") or name.endswith(".lock"):
        raise RecallError(f"{where}: name must be letters, digits and ._- with no leading dot")
    if not isinstance(fields, dict):
        raise RecallError(f"{where}: expected an object with url, sha and language")
    for key in fields:
        if key not in ("url", "sha", "language", "split"):
            raise RecallError(f"{where}: unknown field {key!r}")
    split = fields.get("split", TUNE)
    if split not in SIDES:
        raise RecallError(
            f"{where}: field 'split' must be one of {', '.join(SIDES)}, got {split!r}"
        )
    for key in ("url", "sha", "language"):
        if key not in fields:
            raise RecallError(f"{where}: missing field {key!r}")
        if not isinstance(fields[key], str):
            raise RecallError(f"{where}: field {key!r} must be a string")
    url, sha, language = fields["url"], fields["sha"], fields["language"]
    if not _SHA.fullmatch(sha):
        raise RecallError(f"{where}: field 'sha' must be 40 lowercase hex digits, got {sha!r}")
    scheme = urlsplit(url).scheme
    if scheme not in URL_SCHEMES and not _SCP_URL.fullmatch(url):
        raise RecallError(
            f"{where}: field 'url' must use one of {', '.join(URL_SCHEMES)}, got {url!r}"
        )
    if language not in LANGUAGES:
        raise RecallError(
            f"{where}: field 'language' must be one of {', '.join(sorted(LANGUAGES))}, "
            f"got {language!r}"
        )
    return Pin(name=name, url=url, sha=sha, language=language, split=split)


def select_pins(pins: dict[str, Pin], names: list[str] | None, source: Path) -> list[Pin]:
    if not names:
        return list(pins.values())
    unknown = [name for name in names if name not in pins]
    if unknown:
        raise RecallError(f"{source}: no pin named {unknown[0]!r}")
    return [pins[name] for name in dict.fromkeys(names)]


def cache_root(explicit: str | Path | None) -> Path:
    """--cache, else $RECALL_CACHE, else the platform's user cache folder."""
    chosen = explicit or os.environ.get("RECALL_CACHE") or platformdirs.user_cache_dir("recall")
    return Path(chosen).expanduser().absolute()


def mirror_root(explicit: str | Path | None) -> Path | None:
    chosen = explicit or os.environ.get("RECALL_MIRROR")
    return Path(chosen).expanduser().absolute() if chosen else None


def mirror_source(mirror: Path, url: str) -> Path | None:
    """The bare repository for url in a mirror laid out as DIR/<host>/<path>.git."""
    parts = urlsplit(url)
    host, path = parts.hostname, parts.path
    if not host and _SCP_URL.fullmatch(url):
        host, path = url.split("@", 1)[1].split(":", 1)
    if not host:
        return None
    path = path.strip("/")
    candidates = [mirror / host / path]
    if not path.endswith(".git"):
        candidates.append(mirror / host / f"{path}.git")
    return next((c for c in candidates if c.is_dir()), None)


def checkout_key(pin: Pin) -> str:
    """The folder of pin's checkout under corpora/: its name and sha, so that two clones
    of a project that pin one repo at two commits share a cache without either rebuilding
    the other's checkout under a running run."""
    return f"{pin.name}-{pin.sha[:12]}"


def checkout_path(cache: Path, pin: Pin) -> Path:
    return checkout_entry(cache, pin).path


def fetch(pin: Pin, cache: Path, mirror: Path | None = None, *, deep: bool = False) -> Checkout:
    """Return the frozen checkout of pin, fetching and building it only if it is not there;
    deep also rebuilds one that a finder wrote into (is_clean, not just checkout_problem).

    The checkout is then held in use by this process until it exits (hold_in_use: prune
    leaves it, and nobody rebuilds it under this process's feet). Check, build and hold
    happen under the pin's build lock, which prune must take too, so nothing slips in
    between. A rebuild needs the checkout to itself: if another process holds it, fetch
    refuses rather than change the tree that process is answering from."""
    entry = checkout_entry(cache, pin)
    try:
        with entry.locked():
            entry.sweep()
            problem = checkout_problem(pin, entry.path)
            if problem is None and deep and not is_clean(Checkout(pin, entry.path)):
                problem = "the checkout no longer matches its pin (files changed, added or touched)"
            if problem is None:
                entry.hold()
                return Checkout(pin, entry.path)
            with sole_user(entry.in_use) as sole:
                if not sole:
                    raise RecallError(
                        f"checkout {entry.path}: {problem}, but another run is using it; "
                        f"run again once it has ended"
                    )
                if entry.path.exists():
                    reporter().say(f"recall: {pin.name}: {problem}; rebuilding the checkout")
                _build_checkout(pin, entry, mirror)
    except OSError as exc:
        raise RecallError(f"cache {entry.root}: {exc.strerror or exc}") from None
    except git.GitCommandError as exc:  # a full or read-only disk, seen through git
        raise RecallError(f"cache {entry.root}: {pin.name}: {_last_line(exc.stderr)}") from None
    return Checkout(pin, entry.path)


def checkout_entry(cache: Path, pin: Pin) -> FolderEntry:
    """The cache entry <cache>/corpora/<key> of pin's checkout: its lock, in-use mark,
    sweep of a killed build's temporary folders and drop are every entry's (recall.cache).
    Its check and its making are not FolderEntry.get's: a checkout is trusted by git (its
    marker in .git, the pinned tree at HEAD, and for a deep check every file and mtime,
    is_clean), not by a digest of its files, which would hash a whole corpus on every run,
    and a rebuild needs the checkout to itself (sole_user), not just its lock."""
    return FolderEntry(cache, "corpora", checkout_key(pin), f".git/{MARKER}")


def checkout_problem(pin: Pin, path: Path) -> str | None:
    """Why a cached checkout cannot be trusted for pin, or None when it can (a cheap check)."""
    marker = path / ".git" / MARKER
    if not marker.is_file():
        return "checkout incomplete" if path.exists() else "not fetched"
    recorded = read_marker(marker)
    if recorded is None:
        return f"marker {marker} is not an object with string fields sha and tree"
    if recorded["sha"] != pin.sha:  # before git, which cannot find a sha it never fetched
        return f"checkout holds {recorded['sha'][:12]}, pin is {pin.sha[:12]}"
    try:
        repo = git.Repo(path)
        with repo:
            head_tree = repo.head.commit.tree.hexsha
            pinned_tree = repo.commit(pin.sha).tree.hexsha
    except (ValueError, git.GitError, OSError):
        return "checkout unreadable"
    if recorded["tree"] != pinned_tree:
        return "checkout marker does not record the pinned tree"
    if head_tree != pinned_tree:
        return "checkout HEAD does not hold the pinned tree"
    return None


def read_marker(marker: Path) -> dict[str, str] | None:
    """A checkout's marker as {"sha", "tree"}, or None if it is missing, unreadable, not
    JSON (nested past orjson's depth included) or of any other shape."""
    try:
        recorded = orjson.loads(marker.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(recorded, dict) or not all(
        isinstance(recorded.get(field), str) for field in ("sha", "tree")
    ):
        return None
    return {"sha": recorded["sha"], "tree": recorded["tree"]}


def _build_checkout(pin: Pin, entry: FolderEntry, mirror: Path | None) -> None:
    """Build pin's checkout in a temporary folder beside the entry, its marker written
    last, then put it in place of the old one (set aside and removed first)."""
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{entry.key}-", dir=entry.root))
    try:
        source = _fetch_source(pin, mirror)
        repo = git.Repo.init(tmp)
        with repo:
            _shallow_fetch(repo, pin, source, hint=mirror is None)
            repo.git.update_ref(PIN_REF, pin.sha)
            tree = repo.commit(pin.sha).tree.hexsha
            with repo.git.custom_environment(**FROZEN_IDENTITY):
                frozen = repo.git.commit_tree(tree, "-m", f"recall: frozen {pin.name} {pin.sha}")
            repo.git.update_ref("refs/heads/main", frozen)
            repo.git.symbolic_ref("HEAD", "refs/heads/main")
            repo.git.checkout("-f", "main")
            freeze_mtimes(tmp)
            repo.git.update_index("--refresh")
            repo.git.remote("add", "origin", pin.url)
        (tmp / entry.marker).write_bytes(orjson.dumps({"sha": pin.sha, "tree": tree}))
        entry.drop()
        tmp.rename(entry.path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _fetch_source(pin: Pin, mirror: Path | None) -> str:
    if mirror is None:
        return pin.url
    local = mirror_source(mirror, pin.url)
    if local is None:
        reporter().say(f"recall: {pin.name}: not in mirror {mirror}; fetching {pin.url}")
        return pin.url
    return local.as_uri()


def _shallow_fetch(repo: git.Repo, pin: Pin, source: str, *, hint: bool = False) -> None:
    """Fetch the pinned commit alone; hint: no mirror was given, so a failure says how to
    give one."""
    reporter().aside(f"recall: fetching {pin.name} {pin.sha[:12]} from {source}")
    try:
        repo.git.fetch("--depth", "1", "--no-tags", "--end-of-options", source, pin.sha)
    except git.GitCommandError as exc:
        detail = _last_line(exc.stderr) or f"git exited {exc.status}"
        where = pin.url if source == pin.url else f"{source} (the mirror of {pin.url})"
        raise RecallError(
            f"fetch {pin.name}: cannot fetch {pin.sha[:12]} from {where}: {detail}"
            + (OFFLINE_HINT if hint else "")
        ) from None


# What a failed fetch from a pin's url adds: a machine without the network fetches from
# bare mirrors, and the flag that names them is easy to miss.
OFFLINE_HINT = (
    "; offline, give --mirror DIR (or set RECALL_MIRROR), a folder of bare mirrors laid "
    "out DIR/<host>/<path>"
)


def _last_line(text: str | bytes | None) -> str:
    """git's own reason: its first `fatal:` line, else its last line."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    lines = [
        line.strip().removeprefix("stderr: ").strip("'").strip()
        for line in (text or "").splitlines()
    ]
    lines = [line for line in lines if line]
    fatal = [line for line in lines if line.startswith("fatal:")]
    return (fatal or lines or [""])[0 if fatal else -1]


def freeze_mtimes(root: Path) -> None:
    """Set every file, link and folder under root (except .git) to the frozen instant."""
    stamp = (FROZEN_EPOCH, FROZEN_EPOCH)
    for folder, dirs, files in os.walk(root):
        if folder == str(root):
            dirs[:] = [d for d in dirs if d != ".git"]
        for entry in files + dirs:
            os.utime(os.path.join(folder, entry), stamp, follow_symlinks=False)
        os.utime(folder, stamp)


def is_clean(checkout: Checkout) -> bool:
    """The deep check: the checkout still holds its pin (its marker's sha, the pinned tree
    at HEAD), no file changed, added or written into ignored paths, and every mtime still
    frozen (a touched file is a recency signal the next finder would see)."""
    if checkout_problem(checkout.pin, checkout.path) is not None:
        return False
    try:
        repo = git.Repo(checkout.path)
        with repo:
            if repo.git.status("--porcelain", "--ignored") != "":
                return False
    except (git.GitError, OSError, ValueError):
        return False
    for folder, dirs, files in os.walk(checkout.path):
        if folder == str(checkout.path):
            dirs[:] = [d for d in dirs if d != ".git"]
        for entry in files:
            if os.lstat(os.path.join(folder, entry)).st_mtime != FROZEN_EPOCH:
                return False
    return True
