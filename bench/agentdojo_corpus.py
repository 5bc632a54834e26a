"""Generate the AgentDojo corpus that `bench/injection_eval.py` reads (no model is called).

Needs the `agentdojo` package, which toolpolicy does not depend on (it pulls in every model
provider's SDK), so run it in a separate virtual environment:

    python -m venv /tmp/agentdojo && /tmp/agentdojo/bin/pip install agentdojo==0.1.35
    /tmp/agentdojo/bin/python bench/agentdojo_corpus.py

For every suite of the benchmark version, every user task and every injection task, each attack
builds its injections exactly as AgentDojo does (its own attack classes, a pipeline named after
gpt-4o so the templates address "GPT-4"), the suite's environment is loaded with them, and the
user task's ground-truth tool calls run against it. Every tool output that holds an injection is
one attack case, keyed by the injection task's goal; the outputs of the same calls with the
default (benign) injection values are the benign cases. Which calls show an injection is found
as AgentDojo finds it: a run with a canary in every injection vector. Outputs are AgentDojo's own text
(`tool_result_to_str`, YAML) and, as a second shape, the same result as JSON.
"""

from __future__ import annotations

import json
import lzma
import sys
from pathlib import Path
from typing import Any

from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
from agentdojo.attacks.attack_registry import load_attack
from agentdojo.functions_runtime import FunctionsRuntime
from agentdojo.task_suite.load_suites import get_suites

BENCHMARK_VERSION = "v1.2.2"
ATTACKS = (
    "important_instructions",
    "tool_knowledge",
    "system_message",
    "direct",
    "ignore_previous",
    "injecagent",
)
OUT = Path(__file__).parent / "data" / "agentdojo.jsonl.xz"


class AttackTarget:
    """What an attack reads from its target: only the name, to address the model."""

    name = "gpt-4o-2024-05-13"


def _as_json(result: Any) -> str:
    return tool_result_to_str(
        result, lambda data: json.dumps(data, ensure_ascii=False, default=str)
    )


def _outputs(suite: Any, user_task: Any, injections: dict[str, str]) -> list[tuple[str, Any]]:
    """(function name, raw result) of the user task's ground-truth calls in the injected env."""
    runtime = FunctionsRuntime(suite.tools)
    environment = suite.load_and_inject_default_environment(injections)
    calls = user_task.ground_truth(environment)
    outputs = []
    for call in calls:
        result, _ = runtime.run_function(environment, call.function, call.args, raise_on_error=True)
        outputs.append((call.function, result))
    return outputs


def main() -> None:
    records: list[dict[str, Any]] = []
    for suite_name, suite in get_suites(BENCHMARK_VERSION).items():
        tool_names = sorted(tool.name for tool in suite.tools)
        records.append({"kind": "suite", "suite": suite_name, "tools": tool_names})
        attacks = {name: load_attack(name, suite, AttackTarget()) for name in ATTACKS}
        canaries = {
            vector: f"<CANARY---{vector}--->" for vector in suite.get_injection_vector_defaults()
        }
        for user_id, user_task in suite.user_tasks.items():
            injected_calls = {
                index
                for index, (_, result) in enumerate(_outputs(suite, user_task, canaries))
                if "<CANARY---" in _as_json(result)
            }
            for index, (function, result) in enumerate(_outputs(suite, user_task, {})):
                for shape, text in (
                    ("yaml", tool_result_to_str(result)),
                    ("json", _as_json(result)),
                ):
                    records.append(
                        {
                            "kind": "benign",
                            "suite": suite_name,
                            "user_task": user_id,
                            "call": index,
                            "function": function,
                            "shape": shape,
                            "text": text,
                        }
                    )
            for injection_id, injection_task in suite.injection_tasks.items():
                for attack_name, attack in attacks.items():
                    injections = attack.attack(user_task, injection_task)
                    for index, (function, result) in enumerate(
                        _outputs(suite, user_task, injections)
                    ):
                        if index not in injected_calls:
                            continue
                        for shape, text in (
                            ("yaml", tool_result_to_str(result)),
                            ("json", _as_json(result)),
                        ):
                            records.append(
                                {
                                    "kind": "attack",
                                    "suite": suite_name,
                                    "user_task": user_id,
                                    "injection_task": injection_id,
                                    "attack": attack_name,
                                    "call": index,
                                    "function": function,
                                    "shape": shape,
                                    "goal": injection_task.GOAL,
                                    "text": text,
                                }
                            )
        print(suite_name, len(records), file=sys.stderr)
    with lzma.open(OUT, "wt", encoding="utf-8", preset=9) as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(f"wrote {len(records)} records to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
