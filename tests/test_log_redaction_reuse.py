from __future__ import annotations

import logging

from bench_plugin.providers.http import REDACTED_LOGGERS, log_redaction


def test_the_redaction_filter_is_put_back_on_a_logger_that_lost_it() -> None:
    shared = log_redaction()
    assert log_redaction() is shared  # the quick path: every logger still has it
    logger = logging.getLogger(REDACTED_LOGGERS[1])
    logger.removeFilter(shared)
    try:
        assert log_redaction() is shared
        assert shared in logger.filters
    finally:
        if shared not in logger.filters:
            logger.addFilter(shared)


def test_a_key_added_after_the_quick_path_is_still_redacted() -> None:
    key = "sk-reuse-0123456789abcdef"
    log_redaction()
    log_redaction().add_secrets([key])
    record = logging.LogRecord("httpx", logging.INFO, __file__, 1, "sent %s", (key,), None)
    logging.getLogger("httpx").filter(record)
    assert key not in record.getMessage()
