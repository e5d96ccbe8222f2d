"""What genai-prices answered, remembered between processes: a model's rates on a UTC day.

A fresh process that prices usage imports genai-prices and builds its price table, about 0.1 s:
more than pricing thousands of responses, and a fifth of a ``report daily`` on a small home.
What genai-prices answers for one model on one UTC day is fixed by its version, so
:class:`PriceMemo` keeps those answers in the cache folder (:mod:`murmur_analysis.core.cache`), one
file per genai-prices version, and a later process that prices the same models on the same days
does not import it:

* a model no price matches is remembered as unpriced;
* a model whose price changes only by date (or never): its per-token rates of every tier, for
  each UTC day something was priced on;
* a model whose price depends on the time of day is remembered as such: it is always asked.

Nothing here decides a price: :class:`~murmur_analysis.core.pricing.Pricer` asks genai-prices
what it does not find here, and remembers the answer. User prices are never remembered.

The file is data, never trusted: it is read as the cache reads its files (a regular file of
bounded size, reached without following a link), and only when it is signed with the folder's
key; one that is damaged, forged or of another version is ignored, which costs the import of
genai-prices, never a wrong cost. It is written atomically, at most once per pricing call that
learned something; two processes writing at once each keep a whole file, one of them losing
what the other learned (asked again later).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson

from .cache import PRICES_DIR, PRICES_SUFFIX, cache_dir, folder_key, read_bounded, signed, verified, write_atomic

__all__ = ["PriceMemo", "Tiers"]

#: One tier's rates as remembered: the prompt size it holds up to (``None``: no limit), then its
#: USD per token of input, cache read, cache write, 1-hour cache write, output and reasoning,
#: and the fee per response, each as decimal text.
Tiers = list[list[Any]]

_FORMAT = 1
_MAX_BYTES = 16 << 20
_SEP = "\x1f"


class PriceMemo:
    """The answers of one genai-prices version, as far as they were asked.

    Args:
        version: the genai-prices version they are answers of.
        folder: where its file is kept (``None``: the cache folder's ``prices``, read when
            used); nothing is read nor written when the folder holds no key of this user's.
    """

    def __init__(self, version: str, folder: Path | None = None) -> None:
        self.version = version
        self.folder = folder if folder is not None else cache_dir() / PRICES_DIR
        self._models: dict[str, dict[str, Any]] = {}
        self._tiers: list[Tiers] = []
        self._tier_index: dict[bytes, int] = {}
        self._dirty = False
        self._read()

    @property
    def path(self) -> Path:
        """The file of this version's answers."""
        name = hashlib.blake2b(self.version.encode(), digest_size=8).hexdigest()
        return self.folder / f"genai-prices-{name}{PRICES_SUFFIX}"

    def priced(self, model: str, provider: str | None) -> bool | None:
        """Whether a price matches the model (``None``: not known yet)."""
        entry = self._models.get(_key(model, provider))
        return None if entry is None else bool(entry["priced"])

    def by_time(self, model: str, provider: str | None) -> bool:
        """Whether the model's price is known to depend on the time of day (it is then always asked)."""
        entry = self._models.get(_key(model, provider))
        return entry is not None and bool(entry.get("by_time"))

    def tiers(self, model: str, provider: str | None, day: str) -> Tiers | None:
        """The model's rates on the UTC ``day`` (ISO date), or ``None`` when they are not known."""
        entry = self._models.get(_key(model, provider))
        at = entry.get("days", {}).get(day) if entry is not None else None
        return self._tiers[at] if isinstance(at, int) and 0 <= at < len(self._tiers) else None

    def remember_unpriced(self, model: str, provider: str | None) -> None:
        """No price matches the model."""
        self._set(model, provider, {"priced": False})

    def remember_by_time(self, model: str, provider: str | None) -> None:
        """The model's price depends on the time of day."""
        self._set(model, provider, {"priced": True, "by_time": True})

    def remember(self, model: str, provider: str | None, day: str, tiers: Tiers) -> None:
        """The model's rates on the UTC ``day``."""
        key = _key(model, provider)
        entry = self._models.get(key)
        if entry is None or not entry["priced"] or entry.get("by_time"):
            entry = {"priced": True, "days": {}}
        encoded = orjson.dumps(tiers)
        at = self._tier_index.get(encoded)
        if at is None:
            at = self._tier_index[encoded] = len(self._tiers)
            self._tiers.append(tiers)
        if entry["days"].get(day) != at:
            entry["days"][day] = at
            self._models[key] = entry
            self._dirty = True

    def save(self) -> bool:
        """Write what was learned since the file was read, if anything; ``False`` when it cannot be kept."""
        if not self._dirty:
            return True
        key = folder_key(self.folder, create=True)
        if key is None:
            return False
        body = orjson.dumps({"format": _FORMAT, "genai_prices": self.version, "models": self._models,
                             "tiers": self._tiers})
        try:
            write_atomic(self.path, signed(body, key))
        except OSError:
            return False
        self._dirty = False
        return True

    def _set(self, model: str, provider: str | None, entry: dict[str, Any]) -> None:
        key = _key(model, provider)
        if self._models.get(key) != entry:
            self._models[key] = entry
            self._dirty = True

    def _read(self) -> None:
        key = folder_key(self.folder, create=False)
        data = read_bounded(self.path, _MAX_BYTES) if key is not None else None
        body = verified(data, key) if data is not None and key is not None else None
        if body is None:
            return
        try:
            doc = orjson.loads(body)
        except orjson.JSONDecodeError:
            return
        if not (isinstance(doc, dict) and doc.get("format") == _FORMAT and doc.get("genai_prices") == self.version
                and isinstance(doc.get("models"), dict) and isinstance(doc.get("tiers"), list)):
            return
        self._models = {k: v for k, v in doc["models"].items()
                        if isinstance(v, dict) and isinstance(v.get("priced"), bool)
                        and isinstance(v.get("days", {}), dict)}
        self._tiers = doc["tiers"]
        self._tier_index = {orjson.dumps(t): i for i, t in enumerate(self._tiers)}


def _key(model: str, provider: str | None) -> str:
    return f"{model}{_SEP}{provider or ''}"
