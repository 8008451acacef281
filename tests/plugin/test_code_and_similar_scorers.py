"""Code scorers and ``similar`` end to end: functions from a suite or conftest.py, embeddings offline and by HTTP."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from bench_plugin.cli import main
from bench_plugin.mock.server import MockServer
from bench_plugin.providers.text_vectors import hashed_vector

BOT = """\
models:
  bot:
    provider: scripted
    script:
      - {task: polite, reply: "Thank you for asking: the capital of France is Paris."}
      - {reply: "Paris."}
"""

CHECKS_PY = """\
def is_polite(output, context):
    return {"pass": "thank" in output.lower(), "score": 0.9, "reason": f"{context.task}: looked for thanks"}


def mentions(output, context):
    return context.expected in output
"""


def records(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    path = pytester.path / "bench-results" / "results.jsonl"
    return {rec["task"]: rec for rec in map(json.loads, path.read_text().splitlines())}


def components(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {component["name"]: component for component in record["scores"]["components"]}


# ----------------------------------------------------------------------------- python


def test_python_scorer_from_a_file_and_from_a_module(pytester: pytest.Pytester) -> None:
    pytester.makefile(".py", **{"suites/checks": CHECKS_PY})
    pytester.makefile(".py", **{"suites/graders/__init__": "", "suites/graders/text": CHECKS_PY})
    pytester.makefile(".yaml", **{"suites/code": BOT + """\
tasks:
  - {id: polite, prompt: "Capital of France?", vars: {city: Paris}}
  - {id: terse, prompt: "Capital of France?", vars: {city: Paris}}
scorers:
  - {name: P, type: python, function: "checks.py:is_polite"}
  - {name: M, type: python, function: "graders.text:mentions", value: "{{ city }}"}
"""})
    result = pytester.runpytest("suites")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*terse*", "score 0.9500; failed: P (checks.py:is_polite: terse: looked for thanks)"])
    polite = components(records(pytester)["polite"])
    assert polite["P"] | {"usage": None} == polite["P"] | {
        "value": 0.9, "passed": True, "function": "checks.py:is_polite", "detail": "checks.py:is_polite: "
        "polite: looked for thanks", "usage": None}
    assert (polite["M"]["value"], polite["M"]["passed"]) == (1.0, True)


def test_python_scorer_registered_in_conftest(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
async def is_short(output, context):
    return len(output.split()) <= context.config["max_words"]

def pytest_bench_scorer_types():
    return {"is_short": is_short}
""")
    pytester.makefile(".yaml", **{"suites/short": BOT + """\
tasks:
  - {id: polite, prompt: "Capital?"}
  - {id: terse, prompt: "Capital?"}
scorers:
  - {name: S, type: is_short, config: {max_words: 3}}
"""})
    result = pytester.runpytest("suites")
    result.assert_outcomes(passed=1, failed=1)
    assert components(records(pytester)["terse"])["S"]["detail"] == "is_short returned True"


def graded(pytester: pytest.Pytester, name: str, code: str) -> None:
    """A suite ``name`` whose task ``polite`` is graded by ``grade`` in ``name``.py, beside a plain task."""
    pytester.makefile(".py", **{f"suites/{name}": code})
    pytester.makefile(".yaml", **{f"suites/{name}": BOT + f"""\
tasks:
  - id: polite
    prompt: "Capital?"
    scorers:
      - {{name: G, type: python, function: "{name}.py:grade"}}
  - {{id: plain, prompt: "Capital?"}}
"""})


def test_a_bad_return_value_fails_that_case_with_the_scorers_line(pytester: pytest.Pytester) -> None:
    graded(pytester, "odd", "def grade(output):\n    return 'yes'\n")
    result = pytester.runpytest("suites")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "suites/odd.yaml:11: tasks[0].scorers[0]: python scorer odd.py:grade returned 'yes' (str)",
        "  hint: a code scorer returns true/false, a number from 0 to 1, or a mapping with score / pass / reason",
    ])
    assert records(pytester)["polite"]["status"] == "invalid"


def test_a_scorer_calling_sys_exit_fails_its_case_alone(pytester: pytest.Pytester) -> None:
    """sys.exit() in a scorer stopped the runner's thread: the run hung until killed, with no record written."""
    graded(pytester, "quits", "import sys\n\ndef grade(output):\n    sys.exit(3)\n")
    result = pytester.runpytest_subprocess("suites", "-p", "no:cacheprovider", timeout=60)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*python scorer quits.py:grade raised SystemExit: 3 (quits.py, line 4)*"])
    assert records(pytester)["polite"]["status"] == "invalid"


def test_an_engine_of_the_project_calling_sys_exit_fails_its_case_alone(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "import sys\n\n\nasync def quitting(case, call_model):\n    sys.exit('bye')\n\n\n"
        "def pytest_bench_engines():\n    return {'quitting': quitting}\n"
    )
    pytester.makefile(".yaml", **{"suites/quits": BOT + """\
tasks:
  - {id: polite, prompt: "Capital?", engine: quitting}
  - {id: plain, prompt: "Capital?"}
"""})
    result = pytester.runpytest_subprocess("suites", "-p", "no:cacheprovider", timeout=60)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*the case's code called sys.exit('bye'), which ends this case, not the run*"])
    assert records(pytester)["polite"]["status"] == "invalid"


def test_an_import_error_is_found_at_collection_before_any_call(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makefile(".py", **{"suites/broken": "import nothing_by_this_name\n"})
    pytester.makefile(".yaml", **{"suites/broken": BOT + """\
tasks:
  - {id: polite, prompt: "Capital?"}
scorers:
  - {name: G, type: python, function: "broken.py:grade"}
  - {name: H, type: python, function: "checks:missing"}
"""})
    expected = ("suites/broken.yaml:10: scorers[0].function: importing broken.py failed: ModuleNotFoundError: "
                "No module named 'nothing_by_this_name' (broken.py, line 1)")
    result = pytester.runpytest("suites")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([expected])
    assert records(pytester)["polite"]["call_log"] == []  # the model was never called

    assert main(["validate", str(pytester.path / "suites")]) == 1
    out = capsys.readouterr()
    assert expected.removeprefix("suites/") in out.out + out.err
    assert "broken.yaml: 1 case, 1 with problems" in out.out


# ----------------------------------------------------------------------------- similar


SIMILAR_OFFLINE = BOT + """\
judges:
  emb: {provider: echo}
tasks:
  - {id: polite, prompt: "Capital?"}
  - {id: terse, prompt: "Capital?"}
scorers:
  - name: S
    type: similar
    value: "Thank you for asking: the capital of France is Paris"
    embedding_model: emb
    threshold: 0.8
"""


def test_similar_offline_scores_cosine_similarity_against_the_threshold(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/similar": SIMILAR_OFFLINE})
    result = pytester.runpytest("suites")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*terse*", "score 0.*; failed: S 0.* < 0.8"])
    polite, terse = (components(records(pytester)[task])["S"] for task in ("polite", "terse"))
    assert polite["similarity"] == pytest.approx(1.0) and polite["embedding_model"] == "emb"
    assert terse["similarity"] < 0.8 and terse["passed"] is False
    log = records(pytester)["polite"]["call_log"]
    assert [(call["purpose"], call["model"]) for call in log] == [("candidate", "bot"), ("judge", "emb")]


def test_bench_judge_replaces_the_judges_but_keeps_the_embedding_model(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/similar": SIMILAR_OFFLINE})
    result = pytester.runpytest("suites", "--bench-judge", "echo:stand-in")
    result.assert_outcomes(passed=1, failed=1)  # the same as without --bench-judge: emb still embeds
    assert components(records(pytester)["polite"])["S"]["similarity"] == pytest.approx(1.0)


def test_similar_over_http_makes_one_counted_call_per_case(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    embedder = f"emb-{uuid.uuid4().hex[:8]}"
    mock_server.add_rule({"model": embedder, "path": "embeddings", "status": 429, "retry_after": 0, "times": 1})
    pytester.makefile(".yaml", **{"suites/similar_http": BOT + f"""\
providers:
  local: {{type: openai_compatible, base_url: "{mock_server.openai_base_url}", max_retries: 1}}
judges:
  emb:
    provider: local
    id: {embedder}
    temperature: 0.5
    pricing: {{input_per_mtok: 0.02, output_per_mtok: 0}}
tasks:
  - {{id: polite, prompt: "Capital?"}}
  - {{id: terse, prompt: "Capital?"}}
scorers:
  - {{name: S, type: similar, value: "the capital of France is Paris", embedding_model: emb}}
"""})
    result = pytester.runpytest("suites")
    result.assert_outcomes(passed=1, failed=1)
    sent = [r for r in mock_server.requests if r["model"] == embedder]
    assert [r["path"] for r in sent] == ["/v1/embeddings"] * 3  # two cases, one retried after a 429
    assert all("temperature" not in r["body"] for r in sent)
    for record in records(pytester).values():
        judge = record["usage"]["judge"]
        assert judge["calls"] == 1 and judge["input_tokens"] > 0
        assert judge["cost_usd"] == pytest.approx(judge["input_tokens"] * 0.02 / 1e6)
        assert not [value for component in record["scores"]["components"] for value in component.values()
                    if isinstance(value, list) and len(value) > 2]  # never the vectors
    attempts = sorted(record["usage"]["judge"]["attempts"] for record in records(pytester).values())
    assert attempts == [1, 2]
    offline = sum(a * b for a, b in zip(hashed_vector("Thank you for asking: the capital of France is Paris."),
                                        hashed_vector("the capital of France is Paris"), strict=True))
    assert components(records(pytester)["polite"])["S"]["similarity"] == pytest.approx(offline, abs=1e-6)


def test_similar_with_a_failing_embedding_endpoint_is_an_infrastructure_error(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    embedder = f"emb-{uuid.uuid4().hex[:8]}"
    mock_server.add_rule({"model": embedder, "path": "embeddings", "status": 500})
    pytester.makefile(".yaml", **{"suites/similar_down": BOT + f"""\
providers:
  local: {{type: openai_compatible, base_url: "{mock_server.openai_base_url}", max_retries: 0}}
judges:
  emb: {{provider: local, id: {embedder}}}
tasks:
  - {{id: polite, prompt: "Capital?"}}
scorers:
  - {{name: S, type: similar, value: "Paris", embedding_model: emb}}
"""})
    result = pytester.runpytest("suites")
    result.assert_outcomes(errors=1)
    record = records(pytester)["polite"]
    assert record["status"] == "error" and record["error"]["call"]["purpose"] == "judge"


def test_an_embedding_model_whose_provider_cannot_embed_fails_the_case(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
from bench_plugin.core.chat import Completion
from bench_plugin.providers.interface import BaseProvider

class Canned(BaseProvider):
    async def complete(self, request):
        return Completion(text="Paris")

def pytest_bench_provider_types():
    return {"canned": Canned}
""")
    pytester.makefile(".yaml", **{"suites/canned": BOT + """\
providers:
  mine: {type: canned}
judges:
  emb: {provider: mine, id: any}
tasks:
  - {id: polite, prompt: "Capital?"}
scorers:
  - {name: S, type: similar, value: "Paris", embedding_model: emb}
"""})
    result = pytester.runpytest("suites")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["suites/canned.yaml:14: scorers[[]0].embedding_model: model 'emb' cannot embed texts:"
                                 " its provider type 'canned' has no embeddings endpoint here*"])
    assert records(pytester)["polite"]["status"] == "invalid"
