"""Where and as whom a client connects: the same environment variables and
config file as the Go client and the CLI (client/config.go)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Mapping, Optional

from ._errors import ConfigurationError

ENV_ENDPOINT = "SLUICE_ENDPOINT"  # the API's URL
ENV_KEY = "SLUICE_KEY"  # the access key as ID:SECRET
ENV_ACCOUNT = "SLUICE_ACCOUNT"  # the account (12 digits)
ENV_CONFIG = "SLUICE_CONFIG"  # the config file's path

DEFAULT_ACCOUNT = "000000000001"


@dataclass(frozen=True)
class Config:
    """What `sluice login` saves: endpoint, key (ID:SECRET), account."""

    endpoint: str = ""
    key: str = ""
    account: str = ""


def config_path(environ: Optional[Mapping[str, str]] = None) -> str:
    """The config file's path: $SLUICE_CONFIG, else sluice/config.json in
    $XDG_CONFIG_HOME (when absolute), else in the user's config folder
    (~/.config on Linux, ~/Library/Application Support on macOS, %AppData%
    on Windows), as Go's os.UserConfigDir."""
    env = os.environ if environ is None else environ
    p = env.get(ENV_CONFIG, "")
    if p:
        return p
    xdg = env.get("XDG_CONFIG_HOME", "")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "sluice", "config.json")
    if sys.platform == "win32":
        base = env.get("AppData", "") or env.get("APPDATA", "")
        if not base:
            raise ConfigurationError(f"config folder: %AppData% is not set (set {ENV_CONFIG})")
    elif sys.platform == "darwin":
        home = env.get("HOME", "")
        if not home:
            raise ConfigurationError(f"config folder: $HOME is not set (set {ENV_CONFIG})")
        base = os.path.join(home, "Library", "Application Support")
    else:
        home = env.get("HOME", "")
        if not home:
            raise ConfigurationError(f"config folder: neither $XDG_CONFIG_HOME nor $HOME is set (set {ENV_CONFIG})")
        base = os.path.join(home, ".config")
    return os.path.join(base, "sluice", "config.json")


def read_config(path: str) -> Optional[Config]:
    """The config file at path, or None when there is none."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ConfigurationError(f"read config {path}: {e}") from e
    try:
        data = json.loads(raw)
    except ValueError as e:
        raise ConfigurationError(f"config {path}: {e}") from e
    if not isinstance(data, dict):
        raise ConfigurationError(f"config {path}: want a JSON object")
    fields = {}
    for name in ("endpoint", "key", "account"):
        v = data.get(name, "")
        if v is None:
            v = ""
        if not isinstance(v, str):
            raise ConfigurationError(f"config {path}: {name} must be a string")
        fields[name] = v
    return Config(**fields)


def load_config(path: Optional[str] = None, environ: Optional[Mapping[str, str]] = None) -> Config:
    """The config file at path (config_path() when None) with
    SLUICE_ENDPOINT, SLUICE_KEY and SLUICE_ACCOUNT overriding its fields."""
    env = os.environ if environ is None else environ
    if path is None:
        path = config_path(env)
    cfg = read_config(path) or Config()
    return Config(
        endpoint=env.get(ENV_ENDPOINT, "") or cfg.endpoint,
        key=env.get(ENV_KEY, "") or cfg.key,
        account=env.get(ENV_ACCOUNT, "") or cfg.account,
    )
