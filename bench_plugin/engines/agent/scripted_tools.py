"""Scripted tools: answers declared in the suite, picked by the call's arguments.

The first response whose ``when`` regexes are all found in their arguments answers; its ``result``
(a template, or data sent as JSON) or ``error`` (a template: the call fails) sees ``args`` and the case
variables.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from bench_plugin.core.errors import ToolFailure
from bench_plugin.suite.agent.spec import ToolSpec
from bench_plugin.suite.spec import CaseSpec
from bench_plugin.suite.templates import render_standalone


def scripted_result(tool: ToolSpec, args: Mapping[str, Any], case: CaseSpec) -> str:
    """The text a scripted tool answers for ``args``.

    Raises:
        ToolFailure: the response is an ``error``, or no response applies.
        CaseError: a template of the response does not render (the suite's mistake).
    """
    scope = {**case.variables, "args": dict(args)}
    for response in tool.responses:
        if all(re.search(pattern, _text(args.get(name))) for name, pattern in response.when.items()):
            if response.error is not None:
                raise ToolFailure(_render(response.error, tool, case, scope, "error"))
            if isinstance(response.result, str):
                return _render(response.result, tool, case, scope, "result")
            return json.dumps(response.result, ensure_ascii=False)
    raise ToolFailure(f"{tool.name} has no answer for these arguments: {json.dumps(dict(args), ensure_ascii=False)}")


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _render(source: str, tool: ToolSpec, case: CaseSpec, scope: Mapping[str, Any], option: str) -> str:
    if case.templates is None:
        return render_standalone(source, scope)
    return case.templates.render(source, scope, key=f"{tool.key}.{option}", line=tool.line)
