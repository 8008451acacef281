"""The ``similar`` scorer, offline vectors, and the embedding path of the providers and the mock server."""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from bench_plugin.core.chat import Completion, CompletionRequest, EmbeddingRequest, Embeddings, Message, Usage
from bench_plugin.core.endpoints import ModelSpec, ProviderSpec
from bench_plugin.core.errors import CaseError, JudgeError, ProviderError, TransientProviderError
from bench_plugin.mock.server import MockServer
from bench_plugin.providers.http import HttpPool
from bench_plugin.providers.offline import EchoProvider
from bench_plugin.providers.openai_compat import OpenAICompatProvider, build_embedding_body, parse_embeddings
from bench_plugin.providers.text_vectors import DIMENSIONS, hashed_vector
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.similarity import SimilarScorer, cosine_similarities
from bench_plugin.suite.spec import CaseSpec, CompositeSpec, ScorerSpec
from bench_plugin.suite.templates import TemplateRenderer

OFFLINE = ModelSpec(name="emb", provider=ProviderSpec(name="offline", type="echo"), id="emb", label="emb")
CLAUDE = ModelSpec(name="claude", provider=ProviderSpec(name="anthropic", type="anthropic"), id="c", label="c")


def cosine(a: str, b: str) -> float:
    return sum(x * y for x, y in zip(hashed_vector(a), hashed_vector(b), strict=True))


def make_case(**variables: Any) -> CaseSpec:
    return CaseSpec(
        suite="demo", path="suites/demo.yaml", task="capital", model_name="small", model=None, run=1,
        messages=(Message("user", "What is the capital of France?"),), scorers=(), composite=CompositeSpec(),
        pass_threshold=None, variables=variables, judges={"emb": OFFLINE, "claude": CLAUDE},
        templates=TemplateRenderer(None),
    )


def spec_of(threshold: float | None = None, **options: Any) -> ScorerSpec:
    return ScorerSpec(name="S", type="similar", options=options, key="scorers[0]", line=4, threshold=threshold)


class OfflineEmbeddings:
    """The echo provider's embeddings, counting the calls."""

    def __init__(self) -> None:
        self.requests: list[EmbeddingRequest] = []

    async def __call__(self, request: EmbeddingRequest) -> Embeddings:
        self.requests.append(request)
        return await EchoProvider(request.model.provider).embed(request)


async def _no_calls(request: CompletionRequest) -> Completion:
    raise AssertionError("similar makes no chat calls")


def run_similar(answer: str, embed: Any = None, threshold: float | None = None, case: CaseSpec | None = None,
                **options: Any) -> ComponentScore:
    scorer = SimilarScorer.parse(spec_of(threshold, **{"embedding_model": "emb", **options}))
    case = case or make_case(capital="Paris")
    scorer.check_case(case)
    context = ScoringContext(case, answer, (), _no_calls, embed=embed or OfflineEmbeddings())
    return asyncio.run(scorer.score(context))


# ----------------------------------------------------------------------------- offline vectors


def test_offline_vectors_are_deterministic_unit_vectors() -> None:
    vector = hashed_vector("The capital of France is Paris.")
    assert vector == hashed_vector("The capital of France is Paris.")
    assert len(vector) == DIMENSIONS and math.isclose(sum(x * x for x in vector), 1.0)
    assert hashed_vector("...") == (0.0,) * DIMENSIONS  # nothing to count: the zero vector


def test_offline_vectors_put_similar_texts_close_and_unrelated_ones_far() -> None:
    same_words = cosine("Paris is the capital of France", "The capital of France is Paris.")
    close = cosine("Paris is the capital of France", "The capital of France is Lyon")
    far = cosine("Paris is the capital of France", "I like eating bananas in the morning")
    assert same_words > 0.99 and 0.75 < close < same_words and far < 0.3


# ----------------------------------------------------------------------------- the scorer


def test_similarity_is_the_score_and_the_default_threshold_decides() -> None:
    embed = OfflineEmbeddings()
    score = run_similar("The capital of France is Paris.", embed, value="Paris is the capital of {{ 'France' }}")
    assert score.value == pytest.approx(1.0) and score.passed is True
    assert score.extra == {"similarity": pytest.approx(1.0), "embedding_model": "emb"}
    assert "cosine similarity 1.0000 >= threshold 0.75" in score.detail and "embedding model emb" in score.detail
    (request,) = embed.requests  # one call embeds the answer and every expected text
    assert request.texts == ("The capital of France is Paris.", "Paris is the capital of France")
    assert request.purpose == "judge"


def test_below_the_threshold_fails_and_the_closest_of_several_counts() -> None:
    score = run_similar("Lyon is the capital of France", value=["{{ capital }} is the capital of France", "bananas"],
                        threshold=0.95)
    assert score.passed is False and 0.75 < score.value < 0.95
    assert score.extra["similarities"][0] == score.extra["similarity"] and score.extra["similarities"][1] < 0.3
    assert "< threshold 0.95 (closest of 2 texts: #1)" in score.detail


def test_the_record_keeps_no_vectors() -> None:
    score = run_similar("Paris", value="Paris")
    assert all(not isinstance(value, (list, tuple)) or len(value) < 10 for value in score.to_dict().values())


def test_an_empty_answer_scores_zero_without_a_call() -> None:
    embed = OfflineEmbeddings()
    score = run_similar("  ", embed, value="Paris")
    assert (score.value, score.passed, embed.requests) == (0.0, False, [])


def test_an_expected_text_that_renders_empty_fails_the_case() -> None:
    with pytest.raises(CaseError, match=r"scorers\[0\]\.value: the expected text is empty once rendered"):
        run_similar("Paris", value="{{ nothing }}", case=make_case(nothing=""))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"embedding_model": "emb"}, "similar needs value"),
        ({"embedding_model": "emb", "value": ""}, "similar needs value"),
        ({"embedding_model": "emb", "value": ["a", 3]}, "similar needs value"),
        ({"value": "x"}, "similar needs embedding_model"),
        ({"value": "x", "embedding_model": "emb", "model": "emb"}, "unknown option 'model'"),
    ],
)
def test_options_are_checked_once(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SimilarScorer.parse(spec_of(**options))


def test_an_unknown_or_unfit_embedding_model_fails_at_binding() -> None:
    with pytest.raises(CaseError, match=r"scorers\[0\]\.embedding_model: unknown judge 'nope'"):
        SimilarScorer.parse(spec_of(value="x", embedding_model="nope")).check_case(make_case())
    with pytest.raises(CaseError, match="of type anthropic, which has no embeddings endpoint"):
        SimilarScorer.parse(spec_of(value="x", embedding_model="claude")).check_case(make_case())


def test_vectors_that_cannot_be_compared_leave_the_component_unscored() -> None:
    assert cosine_similarities([1.0, 0.0], [[1.0, 0.0], [0.0, 1.0]]) == [1.0, 0.0]
    with pytest.raises(JudgeError, match="different lengths"):
        cosine_similarities([1.0, 0.0], [[1.0]])
    with pytest.raises(JudgeError, match="zero vector"):
        cosine_similarities([0.0, 0.0], [[1.0, 0.0]])


def test_a_negative_cosine_scores_zero_and_keeps_the_raw_value() -> None:
    async def opposite(request: EmbeddingRequest) -> Embeddings:
        return Embeddings(((1.0, 0.0), (-1.0, 0.0)), usage=Usage(input_tokens=4))

    score = run_similar("up", opposite, value="down")
    assert (score.value, score.raw, score.passed) == (0.0, -1.0, False)
    assert score.usage["input_tokens"] == 4


# ----------------------------------------------------------------------------- the OpenAI wire format


def test_embedding_body_carries_only_embedding_params() -> None:
    model = ModelSpec(name="e", provider=ProviderSpec(name="p", type="openai_compatible"), id="text-embedding-3-small",
                      label="e", params={"temperature": 0.2, "dimensions": 64})
    body = build_embedding_body(EmbeddingRequest(model, ("a", "b")))
    assert body == {"model": "text-embedding-3-small", "input": ["a", "b"], "encoding_format": "float",
                    "dimensions": 64}


def test_embeddings_are_put_back_in_input_order() -> None:
    data = {"data": [{"index": 1, "embedding": [0, 1]}, {"index": 0, "embedding": [1, 0]}],
            "usage": {"prompt_tokens": 3, "total_tokens": 3}}
    parsed = parse_embeddings(data, 2, 0.1)
    assert parsed.vectors == ((1.0, 0.0), (0.0, 1.0)) and parsed.usage.input_tokens == 3


@pytest.mark.parametrize(
    "data",
    [
        {"data": [{"index": 0, "embedding": [1.0]}]},
        {"data": [{"index": 0, "embedding": "AAAA"}, {"index": 1, "embedding": [1.0]}]},
        {"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}]},
        {"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0, 2.0]}]},
        {"object": "list"},
    ],
)
def test_a_malformed_embeddings_body_is_a_retryable_bad_body(data: dict[str, Any]) -> None:
    with pytest.raises(TransientProviderError):
        parse_embeddings(data, 2, 0.1)


# ----------------------------------------------------------------------------- against the mock server


@pytest_asyncio.fixture
async def pool() -> AsyncIterator[HttpPool]:
    pool = HttpPool(size=2)
    yield pool
    await pool.aclose()


def http_model(server: MockServer, model_id: str, **params: Any) -> ModelSpec:
    provider = ProviderSpec("mock", "openai_compatible", base_url=server.openai_base_url, timeout_s=5)
    return ModelSpec(name="emb", provider=provider, id=model_id, label=model_id, params=params)


@pytest.mark.asyncio
async def test_mock_embeddings_match_the_offline_vectors(mock_server: MockServer, pool: HttpPool) -> None:
    model_id = f"emb-{uuid.uuid4().hex[:8]}"
    provider = OpenAICompatProvider(http_model(mock_server, model_id).provider, pool)
    answer = await provider.embed(EmbeddingRequest(http_model(mock_server, model_id), ("Paris is big", "Lyon")))
    assert answer.vectors == (hashed_vector("Paris is big"), hashed_vector("Lyon"))
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (4, None)
    (request,) = [r for r in mock_server.requests if r["model"] == model_id]
    assert request["path"] == "/v1/embeddings" and request["body"]["input"] == ["Paris is big", "Lyon"]


@pytest.mark.asyncio
async def test_mock_embeddings_honour_dimensions_and_rules(mock_server: MockServer, pool: HttpPool) -> None:
    model_id = f"emb-{uuid.uuid4().hex[:8]}"
    mock_server.add_rule({"model": model_id, "path": "embeddings", "status": 503, "times": 1})
    model = http_model(mock_server, model_id, dimensions=16)
    provider = OpenAICompatProvider(model.provider, pool)
    with pytest.raises(TransientProviderError, match="503"):
        await provider.embed(EmbeddingRequest(model, ("Paris",)))
    answer = await provider.embed(EmbeddingRequest(model, ("Paris",)))
    assert answer.vectors == (hashed_vector("Paris", 16),)


def test_mock_embeddings_refuse_what_openai_refuses(mock_server: MockServer) -> None:
    url = f"{mock_server.openai_base_url}/embeddings"
    with httpx.Client(trust_env=False) as client:
        assert client.post(url, json={"model": "m", "input": "one text"}).status_code == 200
        for body in ({"model": "m", "input": [1, 2]}, {"model": "m", "input": [""]},
                     {"model": "m", "input": "x", "dimensions": 0}):
            response = client.post(url, json=body)
            assert response.status_code == 400
            assert response.json()["error"]["type"] == "invalid_request_error"


def test_a_provider_without_embed_is_not_an_embedding_provider() -> None:
    from bench_plugin.providers.anthropic import AnthropicProvider
    from bench_plugin.providers.interface import EmbeddingProvider

    assert not isinstance(AnthropicProvider(CLAUDE.provider, HttpPool(size=1)), EmbeddingProvider)
    assert isinstance(EchoProvider(OFFLINE.provider), EmbeddingProvider)


def test_an_http_error_of_the_embedding_call_propagates_as_a_provider_error() -> None:
    async def failing(request: EmbeddingRequest) -> Embeddings:
        raise ProviderError("http 500", status=500, kind="http_500")

    with pytest.raises(ProviderError, match="http 500"):
        run_similar("Paris", failing, value="Paris")
