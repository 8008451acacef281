"""Which API key variables a suite may send, and where: the user decides, never the suite alone."""

from __future__ import annotations

from collections.abc import Collection
from urllib.parse import urlsplit

from bench_plugin.core.endpoints import PRESETS, ProviderSpec
from bench_plugin.core.errors import CaseError

ALLOW_KEY_OPTION = "--bench-allow-key-env"
ALLOW_KEY_INI = "bench_allow_key_env"

#: The built-in providers' keys and the one host each belongs to, read from the presets.
PRESET_KEY_HOSTS: dict[str, str] = {
    spec.api_key_env: urlsplit(spec.base_url).hostname or ""
    for spec in PRESETS.values()
    if spec.api_key_env and spec.base_url
}

#: Where the built-in HTTP provider types call when a provider gives no ``base_url`` (the providers'
#: ``DEFAULT_BASE_URL``; a test keeps the two equal). Another type's default is not known here.
DEFAULT_BASE_URLS: dict[str, str] = {
    "openai_compatible": "https://api.openai.com/v1",
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}


def check_key(
    provider: ProviderSpec,
    *,
    allowed: Collection[str],
    user_url: bool,
    path: str | None = None,
    key: str | None = None,
    line: int | None = None,
) -> CaseError | None:
    """The problem of sending ``provider``'s key variable where it goes, or None when it may.

    A suite names the environment variable its provider sends as a key (``api_key_env``) and the
    provider's ``base_url``; left to the suite, that would send any secret of the user's environment
    to any server. So the built-in providers' own keys (``OPENAI_API_KEY``, ``OPENROUTER_API_KEY``,
    ``ANTHROPIC_API_KEY``) go to their own hosts over HTTPS, or to a URL the user gave on the command
    line for that provider (``--bench-base-url NAME=URL``); any other variable, or a built-in key sent
    anywhere else, must be named by the user (``--bench-allow-key-env NAME``, ``bench_allow_key_env``).

    Args:
        provider: the endpoint as built, with the user's ``--bench-base-url`` already applied.
        allowed: the variables the user allows (``--bench-allow-key-env``, ``bench_allow_key_env``).
        user_url: the user gave this provider's URL on the command line.
        path: the suite file as messages show it.
        key: the key path of ``api_key_env`` (``providers.local.api_key_env``).
        line: the 0-based line of that key.

    Returns:
        None when the provider sends no key, the user allows the variable, or it is a built-in
        provider's key going to its own host (or to a URL the user chose); else the CaseError its
        models' cases fail with, naming the option that allows it.
    """
    name = provider.api_key_env
    if not name or name in allowed:
        return None
    url = provider.base_url or DEFAULT_BASE_URLS.get(provider.type)
    host = PRESET_KEY_HOSTS.get(name)
    if host is not None and _goes_home(url, host, user_url):
        return None
    return _refusal(provider, name, url, host, path=path, line=line, key=key)


def _goes_home(url: str | None, host: str, user_url: bool) -> bool:
    """A built-in provider's key goes to its own host (over HTTPS), or to the URL the user gave."""
    return user_url or (url is not None and _is_host(url, host))


def _refusal(
    provider: ProviderSpec, name: str, url: str | None, host: str | None, *,
    path: str | None, line: int | None, key: str | None,
) -> CaseError:
    """Why the key may not go to ``url``, and the options that let it."""
    destination = url or f"the default endpoint of provider type '{provider.type}'"
    allow = f"{ALLOW_KEY_OPTION} {name} (or list it under the ini option {ALLOW_KEY_INI})"
    if host is None:
        return CaseError(
            f"the suite would send the environment variable {name} to {destination}; a suite may only send "
            "key variables you allow",
            path=path, line=line, key=key, hint=f"if you trust this suite with {name}, allow it with {allow}",
        )
    return CaseError(
        f"{name} is the key of {host}, and the suite would send it to {destination}",
        path=path, line=line, key=key,
        hint=f"to send it there, give the URL yourself (--bench-base-url {provider.name}={url or 'URL'}) "
        f"or allow the variable with {allow}",
    )


def _is_host(url: str, host: str) -> bool:
    """``url`` is ``https://`` on ``host`` itself, on the default port, with no user name in front."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return False
    return (parts.scheme == "https" and parts.hostname == host and port in (None, 443)
            and parts.username is None and parts.password is None)
