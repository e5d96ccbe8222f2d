"""Cost: the ``usage`` counters priced with genai-prices (offline) and the user's own prices.

`genai-prices <https://pypi.org/project/genai-prices/>`_ ships its price table inside the
package, so pricing never reaches the network. Its counters nest: its ``input_tokens`` is the
whole prompt, cache reads and cache writes being slices of it, and its ``output_tokens`` holds
the reasoning slice. Our normalized counters (``docs/tokens.md``) map onto it as::

    genai-prices input_tokens             = input_tokens + cache_read_tokens + cache_write_tokens
    genai-prices cache_read_tokens        = cache_read_tokens
    genai-prices cache_write_tokens       = cache_write_tokens
    genai-prices output_tokens            = output_tokens + reasoning_tokens
    genai-prices output_reasoning_tokens  = reasoning_tokens

A cache write split by how long it is kept (Anthropic's ``cache_write_5m_tokens`` and
``cache_write_1h_tokens``) is priced by slice: the 1-hour part at the model's 1-hour write rate
(genai-prices' ``cache_write_1h_mtok``; where a price has none, twice the base input rate, as
Anthropic bills it), the rest at the cache-write rate (the 5-minute one). Both are in
``cache_write_cost_usd``; a write with no split is priced at the cache-write rate.

A slice a runtime did not report (a null cache or reasoning counter) is inside the counter it
belongs to, so it is priced as that counter: where an unreported cache slice leaves the uncached
``input_tokens`` null, the uncached price applies to ``input_total_tokens`` less the slices that
were reported. A response whose whole prompt or ``output_tokens`` is unknown, or whose model no price matches, has a
null cost, never 0; each model that cannot be priced gets one ``diagnostics`` row.

Within one price period and one long-context tier, genai-prices' cost is linear in the
counters, so each (model price, tier) is asked a handful of times for its per-token rates, and
the rows are priced as arrays with those rates. Those rates, per model and UTC day, are
remembered in the cache folder (:mod:`murmur_analysis.core.price_memo`), so a later process
pricing the same models on the same days does not load genai-prices' table.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import PriceError
from .codes import value_codes
from .diagnostics import Diagnostic
from .paths import user_path
from .price_memo import PriceMemo, Tiers

__all__ = ["PRICE_KEYS", "SLICES", "Pricer", "Prices", "price_data_version", "price_tables", "sum_costs"]

#: The price keys a user price may set, in USD per million tokens (genai-prices' names).
PRICE_KEYS = ("input_mtok", "cache_read_mtok", "cache_write_mtok", "output_mtok")

#: User prices: ``{model id: {price key: USD per million tokens}}``, or a CSV file with a
#: ``model`` column and one column per price key.
Prices = Mapping[str, Mapping[str, Any]] | str | os.PathLike[str]

#: The cost columns of ``usage``, in schema order, and the counter each one prices.
SLICES = {
    "input_cost_usd": "input_tokens",
    "cache_read_cost_usd": "cache_read_tokens",
    "cache_write_cost_usd": "cache_write_tokens",
    "output_cost_usd": "output_tokens",
}
_ZERO = Decimal(0)
_DAY_US = 86_400_000_000
_EPOCH_DAY = date(1970, 1, 1)


def _genai_version() -> str:
    from importlib.metadata import version

    return version("genai-prices")


def price_data_version(prices: Prices | None = None) -> str:
    """The version of the price data costs are computed from (for stamping exports).

    Args:
        prices: the user prices given to ``ma.load``, if any.

    Returns:
        ``"genai-prices <version>"``, followed by ``"+user:<sha256 prefix>"`` of the user prices
        when there are any.
    """
    stamp = f"genai-prices {_genai_version()}"
    if prices is not None:
        table = _user_prices(prices)
        text = repr(sorted((m, sorted((k, str(v)) for k, v in p.items())) for m, p in table.items()))
        stamp += f"+user:{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    return stamp


def _decimal(model: str, key: str, value: Any) -> Decimal:
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        raise PriceError(f"price {key} of {model!r} is not a number: {value!r}",
                         hint="give USD per million tokens, e.g. 3 or 0.25") from None
    if not number.is_finite() or number < 0:
        raise PriceError(f"price {key} of {model!r} must be a finite number >= 0, not {value!r}")
    return number


def _price_text(path: Path) -> str:
    """A price file's text: UTF-8, with or without the byte-order mark Excel writes."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise PriceError(f"cannot read the price file {path}: {err.strerror or err}") from None
    start = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[start:].decode("utf-8")
    except UnicodeDecodeError as err:
        at = start + err.start
        line = data.count(b"\n", 0, at) + 1
        raise PriceError(f"{path} is not UTF-8 text: byte 0x{data[at]:02x} at offset {at} (line {line})",
                         hint="save it as UTF-8, e.g. Excel's \"CSV UTF-8\"") from None


def _price_rows(path: Path) -> list[tuple[str, dict[str, Any], str]]:
    """The rows of a price file: ``(model, {price key: value}, "line N")``."""
    reader = csv.DictReader(io.StringIO(_price_text(path), newline=""))
    rows: list[tuple[str, dict[str, Any], str]] = []
    try:
        if "model" not in (reader.fieldnames or ()):
            raise PriceError(f"{path} has no 'model' column",
                             hint=f"columns: model, {', '.join(PRICE_KEYS)} (USD per million tokens)")
        for r in reader:
            if None in r:
                raise PriceError(f"{path} line {reader.line_num} has more fields than its header")
            rows.append((r.pop("model") or "", {k: v for k, v in r.items() if v not in (None, "")},
                         f"line {reader.line_num}"))
    except csv.Error as err:
        raise PriceError(f"{path} line {reader.line_num} is not CSV: {err}") from None
    return rows


def _user_prices(prices: Prices) -> dict[str, dict[str, Decimal]]:
    """User prices by lower-cased model id; a model given twice (ids compared case-insensitively) is refused."""
    if isinstance(prices, Mapping):
        rows: Iterable[tuple[str, Mapping[str, Any], str]] = [(m, p, f"key {m!r}") for m, p in prices.items()]
        file = None
    else:
        file = user_path(prices)
        if not file.is_file():
            raise PriceError(f"no price file at {file}", hint="pass a CSV path or a mapping as prices=",
                             cli_hint="give the path of a CSV file: --prices FILE")
        rows = _price_rows(file)
    table: dict[str, dict[str, Decimal]] = {}
    given: dict[str, str] = {}  # where each model was priced: "line N" of the file, or "key 'id'"
    named = "" if file is None else f"{file}: "
    for model, keys, where in rows:
        at = "" if file is None else f"{file} {where}: "
        unknown = set(keys) - set(PRICE_KEYS)
        if unknown:
            raise PriceError(f"{at}unknown price key(s) {', '.join(sorted(unknown))} for {model!r}",
                             hint=f"valid keys: {', '.join(PRICE_KEYS)} (USD per million tokens)")
        if not model or "input_mtok" not in keys or "output_mtok" not in keys:
            raise PriceError(f"{at}the price of {model!r} needs a model id, input_mtok and output_mtok")
        key = model.lower()
        if key in given:
            raise PriceError(f"{named}model {model!r} is priced twice: {given[key]} and {where}",
                             hint="keep one price per model; model ids are compared case-insensitively")
        given[key] = where
        table[key] = {k: _decimal(model, k, v) for k, v in keys.items()}
    return table


#: The rates of a tier, in :class:`_Rates`' order after ``upto``.
_RATE_FIELDS = ("input", "cache_read", "cache_write", "cache_write_1h", "output", "reasoning", "fee")


@dataclass(frozen=True, slots=True)
class _Rates:
    """USD per token of each slice within one tier, and the per-response fee."""

    upto: int | None  # the tier holds prompts of at most this many tokens (None: no limit)
    input: Decimal
    cache_read: Decimal
    cache_write: Decimal
    cache_write_1h: Decimal
    output: Decimal
    reasoning: Decimal
    fee: Decimal


def _tier_starts(model_price: Any) -> list[int]:
    from genai_prices.types import TieredPrices

    starts = {t.start for v in vars(model_price).values() if isinstance(v, TieredPrices) for t in v.tiers}
    return sorted(starts)


def _rates(model_price: Any) -> list[_Rates]:
    """Ask genai-prices for the rates of every tier of one model price (its one calculation rule)."""
    from genai_prices import Usage

    def cost(u: int = 0, r: int = 0, w: int = 0, o: int = 0, z: int = 0, h: int = 0) -> Decimal:
        usage = Usage(input_tokens=u + r + w, cache_read_tokens=r, cache_write_tokens=w,
                      output_tokens=o + z, output_reasoning_tokens=z,
                      **({"cache_write_1h_tokens": h} if h else {}))
        return Decimal(model_price.calc_price(usage)["total_price"])

    has_1h = getattr(model_price, "cache_write_1h_mtok", None) is not None

    out: list[_Rates] = []
    bounds = [0, *_tier_starts(model_price)]
    for i, low in enumerate(bounds):
        upto = bounds[i + 1] if i + 1 < len(bounds) else None
        t0 = low + 1  # a prompt size inside this tier (a tier applies above its start)
        base = cost(u=t0)
        per_input = cost(u=t0 + 1) - base
        fee = base - per_input * t0
        out.append(_Rates(
            upto,
            per_input,
            (cost(r=t0) - fee) / t0,
            (cost(w=t0) - fee) / t0,
            (cost(w=t0, h=t0) - fee) / t0 if has_1h else 2 * per_input,
            cost(u=t0, o=1) - base,
            cost(u=t0, z=1) - base,
            fee,
        ))
    return out


@cache
def _lookup(model: str, provider: str | None) -> Any | None:
    """The genai-prices ``ModelInfo`` of a model id, or None.

    The one rule: a recorded provider genai-prices knows decides, and the model must be priced
    there; otherwise a ``provider/`` prefix of the model id naming a known provider decides;
    otherwise genai-prices matches the model id against every provider's models.
    """
    from genai_prices.data_snapshot import find_provider_by_id, get_snapshot

    snapshot = get_snapshot()
    ref = model.lower()
    attempts: list[tuple[str, str | None]] = []
    if provider and find_provider_by_id(snapshot.providers, provider):
        attempts.append((ref, provider))
    else:
        prefix, _, rest = ref.partition("/")
        if rest and find_provider_by_id(snapshot.providers, prefix):
            attempts.append((rest, prefix))
        attempts.append((ref, None))
    for ref_, provider_id in attempts:
        try:
            return snapshot.find_provider_model(ref_, None, provider_id, None)[1]
        except LookupError:
            continue
    return None


def _by_date(priced_by: Any) -> bool:
    """Whether genai-prices decides ``priced_by``'s price by the UTC date alone (or has one price at every time)."""
    from genai_prices.types import StartDateConstraint

    if not (hasattr(priced_by, "get_prices") and isinstance(priced_by.prices, list)):
        return True
    return all(p.constraint is None or isinstance(p.constraint, StartDateConstraint) for p in priced_by.prices)


def _days(created_at: pa.ChunkedArray, rows: np.ndarray) -> Iterator[tuple[str, datetime | None, list[int]]]:
    """``rows`` by the UTC day of their ``created_at``: ``(day, the day's first time, its rows)``.

    Rows with no time come first, on today's date (a response with no time gets today's price).
    """
    times = created_at.take(pa.array(rows))
    valid = times.is_valid().to_numpy(zero_copy_only=False)
    if not valid.all():
        yield datetime.now(UTC).date().isoformat(), None, rows[~valid].tolist()
    if not valid.any():
        return
    micros = pc.fill_null(times.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()), 0).to_numpy(
        zero_copy_only=False)[valid]
    days, first, which = np.unique(micros // _DAY_US, return_index=True, return_inverse=True)
    order = np.argsort(which, kind="stable")
    by_day = np.split(rows[valid][order], np.cumsum(np.bincount(which))[:-1])
    ats = times.filter(pa.array(valid)).take(pa.array(first, pa.int64())).to_pylist()
    for day, at, members in zip(days.tolist(), ats, by_day, strict=True):
        yield (_EPOCH_DAY + timedelta(days=int(day))).isoformat(), at, members.tolist()


def _to_memo(tiers: list[_Rates]) -> Tiers:
    """Rates as :class:`~.price_memo.PriceMemo` keeps them (decimal text)."""
    return [[t.upto, *(str(getattr(t, name)) for name in _RATE_FIELDS)] for t in tiers]


class Pricer:
    """Prices usage rows: genai-prices' table, overridden or extended by user prices.

    Args:
        prices: user prices (see :data:`Prices`); a model named there is priced with them,
            whatever the provider.
        remember: keep what genai-prices answered in the cache folder, and take it from there
            next time (:mod:`murmur_analysis.core.price_memo`): a later process that prices the
            same models on the same days does not import genai-prices.
    """

    def __init__(self, prices: Prices | None = None, *, remember: bool = True) -> None:
        self.user = {} if prices is None else _user_prices(prices)
        self.version = price_data_version(prices)
        self.memo = PriceMemo(_genai_version()) if remember else None
        self._rates: dict[int, tuple[Any, list[_Rates]]] = {}
        self._remembered: dict[int, tuple[Tiers, list[_Rates]]] = {}
        self._user_prices: dict[str, Any] = {}

    def _priced_by(self, model: str, provider: str | None) -> Any | None:
        """A user ``ModelPrice``, a genai-prices ``ModelInfo`` (prices by time), or None."""
        key = model.lower()
        if key in self.user:
            if key not in self._user_prices:
                from genai_prices.types import ModelPrice

                self._user_prices[key] = ModelPrice(**self.user[key])
            return self._user_prices[key]
        return _lookup(model, provider)

    def _tiers(self, model_price: Any) -> list[_Rates]:
        entry = self._rates.get(id(model_price))
        if entry is None:  # keep the price object alive so its id is not reused
            entry = self._rates[id(model_price)] = (model_price, _rates(model_price))
        return entry[1]

    @staticmethod
    def _in_force(priced_by: Any, at: datetime | None) -> Any:
        """The ``ModelPrice`` in force at ``at``; a response with no time gets today's price."""
        return priced_by.get_prices(at or datetime.now(UTC)) if hasattr(priced_by, "get_prices") else priced_by

    def _priced_rows(self, model: str, provider: str | None, created_at: pa.ChunkedArray,
                     rows: np.ndarray) -> Iterator[tuple[list[_Rates], list[int]]]:
        """The rates of ``model`` for ``rows`` (by each one's ``created_at``), with the rows they price.

        Nothing when no price matches the model. Where every price's constraint is a start date
        (or none), genai-prices decides by the UTC date alone (``StartDateConstraint.active``),
        so it is asked once per day, at the day's first response (a response with no time: today),
        and its answer is remembered; a price by time of day is asked at each response.
        """
        if model.lower() in self.user:
            yield self._tiers(self._priced_by(model, provider)), rows.tolist()
            return
        memo = self.memo
        if memo is not None and memo.priced(model, provider) is False:
            return
        days = list(_days(created_at, rows))
        if memo is not None and not memo.by_time(model, provider):
            known = [self._from_memo(memo.tiers(model, provider, day)) for day, _at, _rows in days]
            if all(tiers is not None for tiers in known):
                for tiers, (_day, _at, members) in zip(known, days, strict=True):
                    assert tiers is not None
                    yield tiers, members
                return
        priced_by = _lookup(model, provider)
        if priced_by is None:
            if memo is not None:
                memo.remember_unpriced(model, provider)
            return
        if not _by_date(priced_by):
            if memo is not None:
                memo.remember_by_time(model, provider)
            times = created_at.take(pa.array(rows)).to_pylist()
            for row, at in zip(rows.tolist(), times, strict=True):
                yield self._tiers(self._in_force(priced_by, at)), [row]
            return
        for day, at, members in days:
            tiers = self._tiers(self._in_force(priced_by, at))
            if memo is not None:
                memo.remember(model, provider, day, _to_memo(tiers))
            yield tiers, members

    def _from_memo(self, remembered: Tiers | None) -> list[_Rates] | None:
        """Remembered rates as :class:`_Rates` (``None``: none remembered, or not readable as rates)."""
        if remembered is None:
            return None
        entry = self._remembered.get(id(remembered))
        if entry is None:
            try:
                rates = [_Rates(None if t[0] is None else int(t[0]), *(Decimal(str(v)) for v in t[1:]))
                         for t in remembered]
            except (TypeError, ValueError, InvalidOperation, IndexError):
                return None
            if not rates:
                return None
            entry = self._remembered[id(remembered)] = (remembered, rates)  # kept alive: its id is not reused
        return entry[1]

    @staticmethod
    def _tier_index(tiers: list[_Rates], prompt: np.ndarray) -> np.ndarray:
        """Which tier prices each prompt size: the first whose bound holds it."""
        bounds = np.array([t.upto for t in tiers[:-1]], dtype=np.float64)
        index: np.ndarray = np.searchsorted(bounds, prompt, side="left")
        return index

    def rates(self, model: str, provider: str | None, at: datetime | None, prompt: int) -> _Rates | None:
        """The per-token rates for one response, or None when no price matches its model."""
        priced_by = self._priced_by(model, provider)
        if priced_by is None:
            return None
        tiers = self._tiers(self._in_force(priced_by, at))
        return tiers[int(self._tier_index(tiers, np.array([prompt], dtype=np.float64))[0])]

    def price(self, usage: pa.Table) -> tuple[dict[str, pa.Array], list[Diagnostic]]:
        """The cost columns for a ``usage`` table, and one diagnostic per unpriced model.

        Rows are grouped by model price and priced as arrays with that price's rates.

        Returns:
            ``cost_usd`` and each of :data:`SLICES` as float64 arrays (null where unknown), and
            the diagnostics.
        """
        n = usage.num_rows
        # Costs are floats, so each counter is priced as the nearest float: past 2**53 that rounds
        # (by at most one part in 2**53), where a checked cast would refuse the whole table.
        counts = {name: usage.column(name).cast(pa.float64(), safe=False).to_numpy(zero_copy_only=False)
                  if name in usage.column_names else np.full(n, np.nan) for name in (
            "input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens", "reasoning_tokens",
            "input_total_tokens", "cache_write_1h_tokens")}
        r, w = counts["cache_read_tokens"], counts["cache_write_tokens"]
        o, z = counts["output_tokens"], counts["reasoning_tokens"]
        whole = counts["input_total_tokens"]  # the tier is chosen by the whole prompt
        # The uncached rest is null when a cache slice went unreported; that slice is then inside
        # the whole prompt and is priced as uncached input, as genai-prices prices it.
        u = np.where(np.isnan(counts["input_tokens"]), whole - np.nan_to_num(r) - np.nan_to_num(w),
                     counts["input_tokens"])
        prompt = np.where(np.isnan(whole), np.nan_to_num(u) + np.nan_to_num(r) + np.nan_to_num(w), whole)
        h = np.nan_to_num(counts["cache_write_1h_tokens"])  # the 1-hour part of the writes, where split
        rates = {name: np.full(n, np.nan) for name in _RATE_FIELDS}
        for model, provider, rows in _by_model(usage):
            if model is None:
                continue
            by_price: dict[int, tuple[list[_Rates], list[int]]] = {}
            for tiers, members in self._priced_rows(model, provider, usage.column("created_at"), rows):
                by_price.setdefault(id(tiers), (tiers, []))[1].extend(members)
            for tiers, members in by_price.values():
                index = np.asarray(members, dtype=np.int64)
                tier = self._tier_index(tiers, prompt[index])
                for name in _RATE_FIELDS:
                    rates[name][index] = np.array([float(getattr(t, name)) for t in tiers])[tier]
        known = ~np.isnan(rates["input"]) & ~np.isnan(u) & ~np.isnan(o) & (np.nan_to_num(u) >= 0)
        parts = {
            "input_cost_usd": u * rates["input"],
            "cache_read_cost_usd": r * rates["cache_read"],
            "cache_write_cost_usd": (w - h) * rates["cache_write"] + h * rates["cache_write_1h"],
            "output_cost_usd": o * rates["output"] + np.nan_to_num(z) * rates["reasoning"],
        }
        total = sum((np.nan_to_num(v) for v in parts.values()), rates["fee"])
        out = {"cost_usd": total, **parts}
        arrays = {name: pa.array(np.where(known, values, np.nan), pa.float64(), from_pandas=True)
                  for name, values in out.items()}
        return arrays, self.diagnose(usage)

    def _has_price(self, model: str, provider: str | None) -> bool:
        """Whether a price matches the model (a user price, or genai-prices')."""
        if model.lower() in self.user:
            return True
        known = self.memo.priced(model, provider) if self.memo is not None else None
        if known is not None:
            return known
        found = _lookup(model, provider) is not None
        if not found and self.memo is not None:
            self.memo.remember_unpriced(model, provider)
        return found

    def diagnose(self, usage: pa.Table) -> list[Diagnostic]:
        """One diagnostics row per model of ``usage`` that no price matches, in model order.

        Only the ``model`` and ``provider`` columns are read.
        """
        unpriced = {model for model, provider, _rows in _by_model(usage)
                    if model is None or not self._has_price(model, provider)}
        if self.memo is not None:
            self.memo.save()  # what this call asked genai-prices, for the next process
        return list(self._diagnostics(unpriced))

    def _diagnostics(self, unpriced: Iterable[str | None]) -> Iterator[Diagnostic]:
        for model in sorted(unpriced, key=lambda m: (m is None, m or "")):
            name = "(no model)" if model is None else model
            yield Diagnostic(
                "pricing", name, None, "unpriced_model",
                f"{self.version} has no price for model {name!r}; its responses have a null cost_usd "
                "(add its price when loading: the prices mapping or CSV file; --prices FILE on the command line)",
            )


def _by_model(usage: pa.Table) -> list[tuple[str | None, str | None, np.ndarray]]:
    """Each ``(model, provider)`` of ``usage`` with its rows (ascending), in the order each first appears."""
    if not usage.num_rows:
        return []
    codes, values = [], []
    for name in ("model", "provider"):
        code, distinct = value_codes(usage.column(name))
        codes.append(code)
        values.append(distinct.to_pylist())
    width = len(values[1])
    pairs, first, group = np.unique(codes[0] * width + codes[1], return_index=True, return_inverse=True)
    rows = np.split(np.argsort(group, kind="stable"), np.cumsum(np.bincount(group, minlength=len(pairs)))[:-1])
    return [(values[0][int(pairs[g]) // width], values[1][int(pairs[g]) % width], rows[g]) for g in np.argsort(first)]


def sum_costs(costs: Iterable[float | None]) -> tuple[float | None, int]:
    """The one rule for adding costs up: ``(sum of the known costs, how many are unknown)``.

    The sum is null when no cost is known (never 0 for unknown); a non-zero count beside a sum
    says the sum is a lower bound.
    """
    total: float | None = None
    unknown = 0
    for cost in costs:
        if cost is None:
            unknown += 1
        else:
            total = cost if total is None else total + cost
    return total, unknown


def price_tables(
    tables: dict[str, pa.Table], prices: Prices | Pricer | None = None, diagnose: bool = True
) -> dict[str, pa.Table]:
    """Fill the cost columns of ``usage`` and ``conversations``; add diagnostics for unpriced models.

    Args:
        tables: every table, as the frame builder finished them (cost columns null).
        prices: user prices (see :data:`Prices`), or a :class:`Pricer` made once for many calls.
        diagnose: add the one diagnostics row per unpriced model (``False`` where the caller
            prices a part of a load and diagnoses the whole with :meth:`Pricer.diagnose`).

    Returns:
        The same tables with ``usage`` costs, ``conversations.cost_usd`` /
        ``unpriced_responses`` (by :func:`sum_costs`) and the diagnostics rows.
    """
    pricer = prices if isinstance(prices, Pricer) else Pricer(prices)
    usage = tables["usage"]
    columns, diagnostics = pricer.price(usage)
    for name, array in columns.items():
        usage = usage.set_column(usage.schema.get_field_index(name), usage.schema.field(name), array)
    per_conversation: dict[tuple[str, str], list[float | None]] = {}
    keys = zip(usage.column("source").to_pylist(), usage.column("conversation_id").to_pylist(), strict=True)
    for key, cost in zip(keys, columns["cost_usd"].to_pylist(), strict=True):
        per_conversation.setdefault(key, []).append(cost)
    conv = tables["conversations"]
    keys = zip(conv.column("source").to_pylist(), conv.column("conversation_id").to_pylist(), strict=True)
    sums = [sum_costs(per_conversation.get(key, ())) for key in keys]
    conv_cost = pa.array([total for total, _ in sums], pa.float64())
    conv_unpriced = pa.array([unknown for _, unknown in sums], pa.int64())
    for name, array in (("cost_usd", conv_cost), ("unpriced_responses", conv_unpriced)):
        conv = conv.set_column(conv.schema.get_field_index(name), conv.schema.field(name), array)
    out = dict(tables, usage=usage, conversations=conv)
    if diagnostics and diagnose:
        diag = tables["diagnostics"]
        rows = pa.Table.from_pylist(
            [{"source": d.source, "path": d.path, "line": d.line, "kind": d.kind, "detail": d.detail}
             for d in diagnostics], schema=diag.schema)
        out["diagnostics"] = pa.concat_tables([diag, rows])
    return out
