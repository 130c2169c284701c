"""The settings as a URL's query: config_to_query writes every setting but the uploaded vectors as strings;
config_from_query reads them back, and never raises: a malformed, out-of-range or tampered value falls back to its
field's default, with a notice that names the field.

    >>> config_from_query(config_to_query(Config(d_k=6)))[0] == Config(d_k=6)
    True
    >>> config_from_query({"d_k": "six"})[1]
    ['Link setting “d_k” is not a whole number; using the default (4).']
"""
from __future__ import annotations

import math
import re
from dataclasses import fields

from ...forward.config import COMBINES, EMBEDDINGS, MASKS, POSITIONALS, SCORES, UNKNOWN_POLICIES, WEIGHTS, Config
from ...math.limits import ConfigError

QUERY_FIELDS = tuple(f.name for f in fields(Config) if f.name != "vectors")
CHOICES = {"embedding": EMBEDDINGS, "unknown": UNKNOWN_POLICIES, "positional": POSITIONALS,
           "combine": COMBINES, "score": SCORES, "mask": MASKS, "weights": WEIGHTS}
INTS = ("d_model", "glove_vocab", "d_k", "d_v", "n_heads", "n_kv_heads", "window", "seed")
FLOATS = ("pe_base", "temperature")
_INT = re.compile(r"[+-]?\d{1,12}")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _number_text(v: float) -> str:
    v = float(v)
    return str(int(v)) if v.is_integer() and abs(v) < 1e15 else repr(v)


def config_to_query(config: Config) -> dict[str, str]:
    """Every setting but the uploaded vectors, as strings for a URL's query (st.query_params)."""
    q = {}
    for name in QUERY_FIELDS:
        v = getattr(config, name)
        if name == "padding":
            q[name] = ",".join(str(p) for p in v)
        elif name == "bias":
            q[name] = "1" if v else "0"
        elif name in FLOATS:
            q[name] = _number_text(v)
        else:
            q[name] = str(v)
    return q


def _parse(name: str, raw: str):
    """One query value -> the field's value; ValueError with a short reason."""
    if name == "sentence":
        return raw
    text = raw.strip()
    if name in CHOICES:
        if text.lower() not in CHOICES[name]:
            raise ValueError(f"is not one of {', '.join(CHOICES[name])}")
        return text.lower()
    if name in INTS:
        if not _INT.fullmatch(text):
            raise ValueError("is not a whole number")
        return int(text)
    if name in FLOATS:
        try:
            v = float(text) if len(text) <= 40 else math.nan
        except ValueError:
            raise ValueError("is not a number") from None
        if not math.isfinite(v):
            raise ValueError("is not a finite number")
        return v
    if name == "bias":
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise ValueError("is not true or false (1 or 0)")
    if name == "padding":
        if not text:
            return ()
        parts = [p.strip() for p in text.split(",")]
        if len(parts) > 128 or not all(_INT.fullmatch(p) for p in parts):
            raise ValueError("is not a list of token positions like 1,3")
        return tuple(int(p) for p in parts)
    raise ValueError("is not a setting")                      # pragma: no cover


def _forward_error(config: Config) -> str | None:
    """None if the forward pass runs, else why not (a ConfigError: heads, padding past the end, no known
    words; or a missing table)."""
    from ...forward.stages import run_forward
    try:
        run_forward(config)
        return None
    except ConfigError as e:
        return _short(e)
    except Exception as e:                                     # e.g. the GloVe package missing
        return type(e).__name__


def config_from_query(params, check_forward: bool = True) -> tuple[Config, list[str]]:
    """Settings from a URL's query: (Config, notices). Never raises.

    A malformed, out-of-range or tampered value falls back to that field's default, with a notice
    naming the field. Values are applied in field order, each checked with the ones before it
    (so of d_k=256 and n_heads=4, over the size limit together, the later one falls back). With
    check_forward, a combination the forward pass rejects (heads not dividing d_model, a padding
    position past the sentence, only unknown words) is undone one field at a time. Keys that
    are not settings are ignored; `vectors` never comes from a URL.
    """
    notices: list[str] = []
    default = Config()
    try:
        items = dict(params).items()
    except Exception:
        return default, ["The link's settings could not be read; using the defaults."]
    parsed = {}
    for name, raw in items:
        if name not in QUERY_FIELDS:
            continue
        if isinstance(raw, (list, tuple)):
            raw = raw[-1] if raw else ""
        try:
            parsed[name] = _parse(name, str(raw))
        except ValueError as e:
            notices.append(f"Link setting “{name}” {e}; using the default ({_shown(name, getattr(default, name))}).")
    values: dict = {}
    for name in QUERY_FIELDS:
        if name not in parsed:
            continue
        try:
            Config(**values, **{name: parsed[name]})
            values[name] = parsed[name]
        except ConfigError as e:
            notices.append(f"Link setting “{name}” cannot be used ({_short(e)}); using the default "
                           f"({_shown(name, getattr(default, name))}).")
    config = Config(**values)
    error = _forward_error(config) if check_forward else None
    if error is not None:
        changed = [k for k in values if values[k] != getattr(default, k)]
        for name in reversed(changed):                        # the one field whose default makes it run
            try:                                              # without it the others may not combine
                trial = Config(**{k: v for k, v in values.items() if k != name})
            except ConfigError:                               # (n_heads dropped, n_kv_heads kept): next one
                continue
            if _forward_error(trial) is None:
                notices.append(f"Link setting “{name}” does not fit with the others ({error}); using the "
                               f"default ({_shown(name, getattr(default, name))}).")
                return trial, notices
        notices.append(f"The link's settings do not work together ({error}); using the defaults.")
        return default, notices
    return config, notices


def _shown(name: str, value) -> str:
    return repr(value) if name == "sentence" else ",".join(map(str, value)) or "none" if name == "padding" else str(value)


def _short(error: Exception) -> str:
    text = str(error)
    return text if len(text) <= 160 else text[:157] + "…"
