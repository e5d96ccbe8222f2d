"""Which API served a model call, and so what its token counters mean: the one provider rule.

A provider's counters are read by the *API* that served the call, not by the model: the same
``anthropic/claude-…`` model reports OpenAI-style counters when OpenRouter serves it over the
OpenAI API, and FlexiGPT's Ollama preset speaks the Anthropic Messages API whatever model it runs.
So the rule is chosen, in order, from

1. the API or SDK the runtime recorded (a litany step's ``meta.json`` ``provider`` row, a
   FlexiGPT ``modelPresetRef.providerName`` read through inference-go's provider presets, a
   murmur ``inference`` event's ``provider``): ``provider_source = "runtime"``;
2. failing that, a guess from the model name (``claude-*`` Anthropic, ``gemini-*``/``gemma-*``
   Google, ``gpt-*``/``o1``/``o3``/``o4``/``chatgpt-*``/``codex-*`` OpenAI; in a
   ``vendor/model`` name the vendor): ``provider_source = "model_name"``;
3. nothing: the OpenAI-compatible rule applies (the API every other runtime preset speaks),
   ``provider_source`` null.

An *accounting* names the counter meaning of one API family (``docs/tokens.md``):

* ``anthropic`` (Anthropic Messages API): the prompt counter excludes the cache slices, which
  sit beside it;
* ``openai`` (OpenAI Chat Completions and Responses, and every OpenAI-compatible API): the
  prompt counter is the whole prompt, cached slice inside; reasoning is inside the output;
* ``google`` (Gemini ``generateContent``): the prompt counter is the whole prompt; thoughts
  are reported beside the output.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

__all__ = [
    "FLEXIGPT_SDK",
    "Accounting",
    "Family",
    "ProviderSource",
    "Resolved",
    "accounting",
    "as_resolved",
    "family_of_api",
    "family_of_model",
    "resolve",
    "route_api",
]

Family = Literal["anthropic", "google", "openai"]
ProviderSource = Literal["runtime", "model_name"]


@dataclass(frozen=True, slots=True)
class Accounting:
    """What one API family's counters contain.

    Attributes:
        family: the API family.
        cache_in_input: the prompt counter already holds the cached slices.
        reasoning_in_output: the output counter already holds the reasoning split.
        cache_write_slice: the API reports cache writes as a slice of its own (only Anthropic).
    """

    family: Family
    cache_in_input: bool
    reasoning_in_output: bool
    cache_write_slice: bool


_ACCOUNTING: dict[Family, Accounting] = {
    "anthropic": Accounting("anthropic", cache_in_input=False, reasoning_in_output=True, cache_write_slice=True),
    "openai": Accounting("openai", cache_in_input=True, reasoning_in_output=True, cache_write_slice=False),
    "google": Accounting("google", cache_in_input=True, reasoning_in_output=False, cache_write_slice=False),
}


def accounting(family: Family | None) -> Accounting:
    """The counter meaning of an API family (``None``: the OpenAI-compatible one)."""
    return _ACCOUNTING[family or "openai"]


#: inference-go's provider presets (``modelpreset/provider_*.go``): the SDK each built-in
#: FlexiGPT provider is served through. Every provider not listed speaks an OpenAI API
#: (Chat Completions or Responses), whose counters read alike.
FLEXIGPT_SDK: dict[str, Family] = {
    "anthropic": "anthropic",
    "ollama": "anthropic",
    "moonshot": "anthropic",
    "googlegemini": "google",
    "openai": "openai",
    "openairesponses": "openai",
    "openaichat": "openai",
    "openrouter": "openai",
    "deepseek": "openai",
    "xai": "openai",
    "mistral": "openai",
    "huggingface": "openai",
    "llamacpp": "openai",
    "lmstudio": "openai",
    "localai": "openai",
    "vllm": "openai",
    "sglang": "openai",
}

# A recorded provider or API row: the first family whose word it contains. OpenAI-compatible
# gateways come first: they speak the OpenAI API whatever model they serve.
_API_WORDS: tuple[tuple[Family, tuple[str, ...]], ...] = (
    ("openai", ("openrouter", "openai", "azure", "groq", "together", "deepseek", "mistral", "xai", "ollama")),
    ("anthropic", ("anthropic", "claude")),
    ("google", ("google", "gemini", "vertex")),
)
_MODEL_PREFIXES: tuple[tuple[Family, tuple[str, ...]], ...] = (
    ("anthropic", ("claude", "anthropic")),
    ("google", ("gemini", "gemma", "google", "vertex")),
    ("openai", ("gpt", "chatgpt", "o1", "o3", "o4", "codex", "openai")),
)


@lru_cache(maxsize=1 << 12)
def family_of_api(api: str | None, table: tuple[tuple[str, Family], ...] = ()) -> Family | None:
    """The API family a runtime-recorded provider or API name means, or ``None`` if it says none.

    Args:
        api: the recorded name (a litany provider row, a FlexiGPT provider name).
        table: a runtime's own provider presets, as ``(name, family)``; when given, only an
            exact name decides (a user-defined provider's name says nothing of its API).
    """
    if not api:
        return None
    low = api.strip().lower()
    if table:  # a runtime with presets of its own: only a preset's name tells its API
        return next((family for name, family in table if low == name), None)
    for family, words in _API_WORDS:
        if any(w in low for w in words):
            return family
    return None


@lru_cache(maxsize=1 << 12)
def family_of_model(model: str | None) -> Family | None:
    """A guess of the API family from a model name alone (``None`` when it tells nothing)."""
    if not model:
        return None
    low = model.strip().lower()
    head, sep, tail = low.partition("/")
    for candidate in ((head, tail.rpartition("/")[2]) if sep else (low,)):
        for family, prefixes in _MODEL_PREFIXES:
            if candidate.startswith(prefixes):
                return family
    if "claude" in low:
        return "anthropic"
    if "gemini" in low:
        return "google"
    return None


@dataclass(frozen=True, slots=True)
class Resolved:
    """The counter rule chosen for one response, and what chose it.

    Attributes:
        accounting: the counter meaning applied.
        family: the API family, or ``None`` when nothing told (the OpenAI-compatible rule).
        source: ``"runtime"`` (the runtime recorded the API), ``"model_name"`` (a guess from
            the model name), or ``None``.
    """

    accounting: Accounting
    family: Family | None
    source: ProviderSource | None


def resolve(api: str | None, model: str | None, table: tuple[tuple[str, Family], ...] = ()) -> Resolved:
    """The one provider rule: the recorded API decides; else the model name, marked as a guess.

    Args:
        api: the provider or API the runtime recorded for the call, if any.
        model: the model that answered, if known.
        table: a runtime's own provider presets (exact names), consulted first.
    """
    family = family_of_api(api, table)
    if family is not None:
        return Resolved(accounting(family), family, "runtime")
    family = family_of_model(model)
    if family is not None:
        return Resolved(accounting(family), family, "model_name")
    return Resolved(accounting(None), None, None)


def route_api(model: str | None) -> str | None:
    """The provider a driver route names: ``openrouter`` in ``openrouter/anthropic/claude-sonnet-4``.

    A runtime that routes calls by a ``provider/model`` string (murmur's drivers) speaks the
    route's API whatever model it serves, so the route's head is a recorded provider; a model
    name without a ``/`` names no route (``None``).
    """
    return model.split("/", 1)[0] if model is not None and "/" in model else None


def as_resolved(api: Resolved | str | None, table: tuple[tuple[str, Family], ...] = ()) -> Resolved:
    """An API given as a :class:`Resolved`, a family name, or a recorded provider name.

    Args:
        api: a :class:`Resolved` is returned as is; ``"anthropic"``, ``"openai"`` or
            ``"google"`` name the family outright; any other name is resolved as a recorded
            provider (``None``: nothing told).
        table: a runtime's own provider presets, for a recorded name.
    """
    if isinstance(api, Resolved):
        return api
    if api in _ACCOUNTING:
        family: Family = api
        return Resolved(accounting(family), family, "runtime")
    return resolve(api, None, table)


#: :data:`FLEXIGPT_SDK` in the form :func:`resolve` takes.
FLEXIGPT_TABLE: tuple[tuple[str, Family], ...] = tuple(FLEXIGPT_SDK.items())
