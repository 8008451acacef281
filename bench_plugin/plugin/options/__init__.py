"""Command-line and ini options, checked once and turned into what the suite layer wants."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.core.endpoints import PRESETS, url_problem
from bench_plugin.core.errors import SuiteError
from bench_plugin.plugin.options.baseline import read_baseline
from bench_plugin.plugin.options.calls import read_call_settings
from bench_plugin.plugin.options.controls import ControlOptions, read_control_options
from bench_plugin.plugin.options.runs import read_run_settings
from bench_plugin.run.run_history import RunSettings
from bench_plugin.run.runner import RunnerSettings
from bench_plugin.run.shards import Shard, parse_shard
from bench_plugin.suite.agent.spec import SandboxOverride
from bench_plugin.suite.build import BuildOptions
from bench_plugin.suite.discover import SUITE_SUFFIXES, looks_like_suite
from bench_plugin.suite.expand import ExpandOptions
from bench_plugin.suite.load import LoadShape, load_from_option
from bench_plugin.suite.loader import load_suite_file


@dataclass(frozen=True)
class BenchOptions:
    """The --bench-* options, checked, in the form the later stages take them."""

    concurrency: int
    output_dir: Path
    build: BuildOptions
    expand: ExpandOptions
    shard: Shard | None = None
    calls: RunnerSettings = field(default_factory=RunnerSettings)
    controls: ControlOptions = field(default_factory=ControlOptions)  # --bench-limit, --bench-model-arg
    run: RunSettings = field(default_factory=RunSettings)
    baseline: Path | None = None  # --bench-baseline: the results file the run is compared with at its end


def read_options(config: pytest.Config) -> BenchOptions:
    """Parse the --bench-* options.

    Raises:
        pytest.UsageError: naming the option, what it expects and what it got.
    """
    concurrency = config.getoption("bench_concurrency")
    if concurrency is None:
        concurrency = _ini_int(config, "bench_concurrency")
    if concurrency < 1:
        raise pytest.UsageError(f"--bench-concurrency: expected a whole number >= 1, got {concurrency}")
    runs = config.getoption("bench_runs")
    if runs is not None and runs < 1:
        raise pytest.UsageError(f"--bench-runs: expected a whole number >= 1, got {runs}")
    models = _split_models(config.getoption("bench_models"))
    controls = read_control_options(config)
    judge = config.getoption("bench_judge")
    if judge is not None and ":" not in judge:
        raise pytest.UsageError(f"--bench-judge: expected PROVIDER:MODEL such as openai:gpt-4o, got {judge!r}")
    output = Path(config.getoption("bench_output") or config.getini("bench_output"))
    if not output.is_absolute():
        output = config.rootpath / output
    baseline = read_baseline(config, output)  # a bare name is one of the output folder's named runs
    run, output = read_run_settings(config, output)  # a named run has its own folder
    return BenchOptions(
        concurrency=concurrency,
        output_dir=output,
        build=BuildOptions(
            base_urls=_base_urls(config.getoption("bench_base_url")),
            judge=judge,
            allowed_paths=_allowed_paths(config),
            allowed_key_env=_allowed_key_env(config),
            sandbox=SandboxOverride(config.getoption("bench_sandbox", None),
                                    config.getoption("bench_sandbox_image", None),
                                    allow_none=bool(config.getini("bench_allow_no_sandbox"))),
        ),
        expand=ExpandOptions(models=models, runs=runs, model_args=controls.model_args,
                             load=_load(config.getoption("bench_load"))),
        shard=_shard(config.getoption("bench_shard", None)),
        calls=read_call_settings(config),
        controls=controls,
        run=run,
        baseline=baseline,
    )


def _load(value: str | None) -> LoadShape | None:
    if value is None:
        return None
    try:
        return load_from_option(value)
    except ValueError as exc:
        raise pytest.UsageError(f"--bench-load: {exc}") from None


def _shard(value: str | None) -> Shard | None:
    if value is None:
        return None
    try:
        return parse_shard(value)
    except ValueError as exc:
        raise pytest.UsageError(f"--bench-shard: {exc}") from None


def _ini_int(config: pytest.Config, name: str) -> int:
    raw = config.getini(name)
    try:
        return int(str(raw))
    except ValueError:
        raise pytest.UsageError(f"ini option {name}: expected a whole number, got {raw!r}") from None


def _split_models(values: list[str] | None) -> tuple[str, ...] | None:
    if not values:
        return None
    names = tuple(dict.fromkeys(n.strip() for v in values for n in v.split(",") if n.strip()))
    if not names:
        raise pytest.UsageError("--bench-models: expected at least one model name")
    return names


def _allowed_paths(config: pytest.Config) -> tuple[Path, ...]:
    """--bench-allow-path (relative to where pytest was started), then bench_allow_paths (relative to the ini)."""
    given = [("--bench-allow-path", config.invocation_params.dir / p) for p in config.getoption("bench_allow_path")]
    given += [("ini option bench_allow_paths", Path(p)) for p in config.getini("bench_allow_paths")]
    for source, path in given:
        if not path.exists():
            raise pytest.UsageError(f"{source}: no such file or folder: {path}")
    return tuple(dict.fromkeys(path.resolve() for _, path in given))


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _allowed_key_env(config: pytest.Config) -> tuple[str, ...]:
    given = [("--bench-allow-key-env", n) for v in config.getoption("bench_allow_key_env") for n in v.split(",")]
    given += [("ini option bench_allow_key_env", name) for name in config.getini("bench_allow_key_env")]
    for source, name in given:
        if not _ENV_NAME.fullmatch(name.strip()):
            raise pytest.UsageError(f"{source}: expected an environment variable name such as MY_API_KEY, got {name!r}")
    return tuple(dict.fromkeys(name.strip() for _, name in given))


def _base_urls(values: list[str]) -> dict[str, str]:
    urls: dict[str, str] = {}
    for value in values:
        name, sep, url = value.partition("=")
        if not sep or not name or not url.startswith(("http://", "https://")) or "@" in url.split("/")[2]:
            raise pytest.UsageError(
                f"--bench-base-url: expected PROVIDER=URL such as vllm=http://127.0.0.1:8000/v1 (no user:password@: "
                f"reports print the URL), got {value!r}"
            )
        found = url_problem(url)
        if found is not None:
            raise pytest.UsageError(f"--bench-base-url {value}: {found}")
        urls[name] = url
    return urls


def wants_html_report(config: pytest.Config, output_dir: Path, names_suites: bool) -> Path | None:
    """Where to write the pytest-html report by default, or None.

    Only when suites are being run (``names_suites``: ``args_name_suites``) and the user has not chosen
    (``--html``) or declined (``--bench-html off``).
    """
    if not hasattr(config.option, "htmlpath") or config.option.htmlpath or config.option.collectonly:
        return None
    choice = config.getoption("bench_html")
    if choice == "off":
        return None
    if choice:
        return Path(choice)
    return output_dir / "report.html" if names_suites else None


def args_name_suites(config: pytest.Config) -> bool:
    """Whether the command line names a YAML file, or a folder with a suite in it or in its subfolders.

    A suite, not any YAML: a project's ``docker-compose.yml`` or ``.pre-commit-config.yaml`` made every run of
    its own tests write a report.html. Two levels deep, for speed: this runs in every pytest run.
    """
    for arg in config.args:
        path = config.invocation_params.dir / arg.split("::")[0]
        if path.suffix in SUITE_SUFFIXES:
            return True
        if path.is_dir() and any(map(looks_like_suite, [*path.glob("*"), *path.glob("*/*")])):
            return True
    return False


@dataclass
class _KnownNames:
    """The names the suites of this run define: what the command line may name."""

    models: set[str] = field(default_factory=set)
    judges: set[str] = field(default_factory=set)  # a judge's calls may be limited by its name too
    providers: set[str] = field(default_factory=lambda: set(PRESETS))
    ids: set[str] = field(default_factory=set)  # provider:model-id, of the suites and the command line

    def read(self, data: dict[str, Any]) -> None:
        """Add one suite's models, judges, providers and their provider:model-id."""
        self.models.update(data.get("models") or {})
        self.judges.update(data.get("judges") or {})
        self.providers.update(data.get("providers") or {})
        for section in ("models", "judges"):
            for name, entry in (data.get(section) or {}).items():
                if isinstance(entry, dict) and entry.get("provider"):
                    self.ids.add(f"{entry['provider']}:{entry.get('id') or name}")

    def unknown_models(self, names: Sequence[str]) -> list[str]:
        return [n for n in names if n not in self.models and n.partition(":")[0] not in self.providers]

    def unknown_providers(self, names: Sequence[str]) -> list[str]:
        return [name for name in names if name not in self.providers]

    def unknown_limited_models(self, names: Sequence[str]) -> list[str]:
        return [n for n in names if n not in self.models and n not in self.judges and n not in self.ids]


def _known_names(suite_files: Sequence[Path], names: Sequence[str]) -> _KnownNames:
    """Read every suite that loads; those that do not are left to collection, which reports them with their line."""
    known = _KnownNames(ids={name for name in names if ":" in name})
    for path in suite_files:
        try:
            known.read(load_suite_file(path).data)
        except SuiteError:
            continue
    return known


def check_names(
    names: Sequence[str] | None,
    base_url_providers: Sequence[str],
    suite_files: Sequence[Path],
    limited_providers: Sequence[str] = (),
    limited_models: Sequence[str] = (),
    judge: str | None = None,
) -> None:
    """Refuse names on the command line that no suite knows, listing the choices.

    Silence would run nothing (--bench-models) or the wrong endpoint (--bench-base-url). Suites that do not
    load are left to collection, which reports them with their line.
    """
    if not suite_files or not any((names, base_url_providers, limited_providers, limited_models, judge)):
        return
    known = _known_names(suite_files, names or ())
    _refuse_unknown_models(known, names or ())
    judge_provider = [judge.partition(":")[0]] if judge else []  # each suite said "expected provider:model"
    for option, given in (("--bench-base-url", base_url_providers), ("--bench-rate-limit", limited_providers),
                          ("--bench-judge", judge_provider)):
        _refuse_unknown_providers(known, option, given)
    _refuse_unknown_limited_models(known, limited_models)


def _refuse_unknown_models(known: _KnownNames, names: Sequence[str]) -> None:
    unknown = known.unknown_models(names)
    if unknown:
        raise pytest.UsageError(
            f"--bench-models: unknown model(s) {', '.join(unknown)}. Choose from the suites' models "
            f"({', '.join(sorted(known.models)) or 'none'}) or write PROVIDER:MODEL with a provider from: "
            f"{', '.join(sorted(known.providers))}"
        )


def _refuse_unknown_providers(known: _KnownNames, option: str, given: Sequence[str]) -> None:
    unknown = known.unknown_providers(given)
    if unknown:  # a misspelt name would leave the run unthrottled, or on the wrong endpoint, in silence
        raise pytest.UsageError(
            f"{option}: unknown provider(s) {', '.join(unknown)}; choose from: {', '.join(sorted(known.providers))}"
        )


def _refuse_unknown_limited_models(known: _KnownNames, limited_models: Sequence[str]) -> None:
    unknown = known.unknown_limited_models(limited_models)
    if unknown:
        raise pytest.UsageError(
            f"--bench-model-rate-limit: unknown model(s) {', '.join(unknown)}. Choose from the suites' models and "
            f"judges ({', '.join(sorted(known.models | known.judges)) or 'none'}) or their PROVIDER:MODEL-ID "
            f"({', '.join(sorted(known.ids)) or 'none'}), or name the model with --bench-models PROVIDER:MODEL-ID too"
        )
