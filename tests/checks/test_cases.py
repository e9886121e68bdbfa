"""Issue #12 item 6: ``ovtui check`` validates cases against their environment (the sample one here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from workspace_support import build_sample_workspace

from ovtui.cli.main import main


def _first_case(root: Path) -> dict[str, object]:
    case: dict[str, object] = json.loads(
        (root / "datasets/support/train.jsonl").read_text(encoding="utf-8").splitlines()[0]
    )
    return case


def test_cases_are_checked_against_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    good = _first_case(root)
    misspelt = {("task_signatur" if k == "task_signature" else k): v for k, v in good.items()}
    no_query = {**good, "input": {**good["input"], "user_query": ""}}  # type: ignore[dict-item]
    rubric = json.loads(json.dumps(good["rubric"]))
    rubric["criteria"][0]["metadata"] = {"kind": "orderd", "before": "get_customer"}
    rubric["criteria"][1]["metadata"] = {"kind": "order", "before": "get_resrvation"}
    bad_kind = {**good, "rubric": rubric}
    lines = [json.dumps(good), json.dumps(misspelt), json.dumps(no_query), json.dumps(bad_kind)]
    pretty = json.dumps(good, indent=2)  # one case spread over many lines
    (root / "datasets/extra").mkdir()
    (root / "datasets/extra/test.jsonl").write_text("\n".join(lines) + "\n" + pretty + "\n", encoding="utf-8")

    assert main(["check", str(root)]) == 1
    out = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("note: ")]
    problems = [line for line in out if line.startswith("datasets/extra/test.jsonl:")]
    first_pretty = len(lines) + 1
    assert problems == [
        "datasets/extra/test.jsonl:2: unknown key 'task_signatur' — did you mean 'task_signature'?; "
        "not a valid case: task_signature: Field required",
        "datasets/extra/test.jsonl:3: input.user_query is missing: the sample agent has no request to answer",
        "datasets/extra/test.jsonl:4: rubric.criteria[0] (verify_identity): unknown criterion kind 'orderd'"
        " — did you mean 'order'? (known: required_call, forbidden_call, order, confirmed_before, state); "
        "rubric.criteria[1] (lookup_before_cancel): kind 'order' needs metadata.after; "
        "rubric.criteria[1] (lookup_before_cancel): metadata.before names no sample tool: 'get_resrvation'"
        " — did you mean 'get_reservation'?",
        f"datasets/extra/test.jsonl:{first_pretty}: a case spans lines {first_pretty}–"
        f"{first_pretty + pretty.count(chr(10))}; a .jsonl file holds one case per line",
    ]
    assert out[-1].startswith("4 problem(s)")


def test_lines_the_sample_agent_cannot_use_are_notes_with_their_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    path = root / "memories/experiences/refund_help.md"
    path.write_text(
        "## Situation\n- A customer wants money back.\n## Approach\n- Open the reservation first.\n"
        "- Be warm.\n## Reflect\n- Never refund a non-refundable ticket.\n",
        encoding="utf-8",
    )
    assert main(["check", str(root), "--notes"]) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if "refund_help.md:5" in line]
    assert notes == [
        "note: memories/experiences/refund_help.md:5: "
        "line 5 is not understood by the sample agent: - Be warm."
    ]


def test_an_object_left_open_does_not_swallow_the_cases_after_it() -> None:
    from ovtui.checks.cases import records

    lines = [(1, b"{\n"), (2, b'{"a": 1}\n'), (3, b"{\n"), (4, b'  "b": 2\n'), (5, b"}\n"), (6, b"{oops\n")]
    found = [(r.first_line, r.last_line, r.value, r.error.split(";")[0]) for r in records(lines, 1000)]
    assert found == [
        (1, 1, None, "not valid JSON: an object is never closed"),
        (2, 2, {"a": 1}, ""),
        (3, 5, {"b": 2}, "a case spans lines 3–5"),
        (6, 6, None, "not valid JSON: key must be a string at line 1 column 2"),
    ]
