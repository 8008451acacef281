"""A refused request (HTTP 400, 422) names its likely cause from the server's answer."""

from __future__ import annotations

from bench_plugin.plugin.refusals import likely_cause


def test_a_parameter_the_server_names_is_traced_to_the_suite_or_the_command_line() -> None:
    said = "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens'."
    assert likely_cause(said, ["temperature", "max_tokens"], ()) == (
        "the server does not take parameter 'max_tokens', which the suite (the model's parameters) sent: leave it out "
        "for this model")
    assert "which --bench-model-arg sent" in (likely_cause(said, ["max_tokens"], ["max_tokens"]) or "")


def test_a_context_overflow_and_an_answer_that_names_nothing() -> None:
    assert (likely_cause("Requested tokens (900) exceed context window of 512", [], ()) or "").startswith(
        "the prompt does not fit the model's context")
    assert likely_cause("prompt is too long: 210000 tokens > 200000 maximum", [], ()) is not None
    assert likely_cause("Bad request", ["temperature"], ["temperature"]) is None
    assert likely_cause("Unexpected fields in the request", ["temperature"], ()) is None  # nothing of ours to name
