"""Settings <-> URL query parameters. Bad values fall back to defaults, each with a notice."""
from __future__ import annotations

from dataclasses import fields

from attention_core import Config, ConfigError

DEFAULT = Config()
URL_FIELDS = [f.name for f in fields(Config) if f.name != "vectors"]


def config_to_query(config: Config) -> dict[str, str]:
    """Only what differs from the defaults, as strings."""
    out = {}
    for name in URL_FIELDS:
        value = getattr(config, name)
        if value == getattr(DEFAULT, name):
            continue
        if isinstance(value, bool):
            out[name] = "1" if value else "0"
        elif isinstance(value, tuple):
            out[name] = ",".join(map(str, value))
        elif isinstance(value, float):
            out[name] = f"{value:g}"
        else:
            out[name] = str(value)
    if config.embedding == "upload":          # the file cannot travel in a URL
        out.pop("embedding", None)
    return out


def _parse(name: str, text: str):
    default = getattr(DEFAULT, name)
    if isinstance(default, bool):
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError
    if isinstance(default, int):
        return int(text)
    if isinstance(default, float):
        return float(text)
    if isinstance(default, tuple):
        return tuple(int(p) for p in text.split(",") if p.strip())
    return text


def config_from_query(params: dict) -> tuple[Config, list[str]]:
    """A Config from URL parameters; never raises. Unknown keys are ignored."""
    values, notices = {}, []
    for name in URL_FIELDS:
        if name not in params:
            continue
        raw = params[name]
        raw = raw[-1] if isinstance(raw, list) else raw
        try:
            value = _parse(name, str(raw)[:20_000])
            Config(**{**({"embedding": "random"} if name == "d_model" else {}), name: value})
        except (ValueError, ConfigError) as err:
            reason = str(err) if isinstance(err, ConfigError) else "not readable"
            notices.append(f"The link's {name}={str(raw)[:40]!r} was ignored ({reason}); using the default.")
            continue
        values[name] = value
    try:
        return Config(**values), notices
    except ConfigError as err:
        notices.append(f"The link's settings do not fit together ({err}); using the defaults.")
        return DEFAULT, notices
