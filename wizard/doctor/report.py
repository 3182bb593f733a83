"""The doctor's report as text for a terminal and as JSON for scripts. Pure formatting."""

from __future__ import annotations

import textwrap
from typing import Any

from gpuwizard.core.codec import to_jsonable
from gpuwizard.core.facts import HostFacts, NvmlOk
from gpuwizard.doctor.findings import Report

JSON_SCHEMA = 1
LABELS = {"problem": "PROBLEM", "warn": "WARN", "unknown": "UNCHECKED", "ok": "ok"}
_INDENT = " " * 11


def _wrapped(prefix: str, text: str, width: int) -> list[str]:
    return textwrap.wrap(
        text, width, initial_indent=_INDENT + prefix, subsequent_indent=_INDENT + "  "
    )


def text_lines(report: Report, width: int = 100) -> list[str]:
    lines = [f"gpuwizard doctor: {report.summary}", ""]
    for finding in report.findings:
        lines.append(f"{LABELS[finding.severity]:<10} {finding.title}")
        if finding.severity == "ok":
            continue
        lines += _wrapped("", finding.explanation, width)
        if finding.fix:
            lines += _wrapped("fix: ", finding.fix, width)
        for item in finding.evidence[:6]:
            lines += _wrapped("· ", item, width)
    if report.unread:
        lines += ["", "Could not read:"] + [f"  {why}" for why in report.unread]
    return lines


def host_summary(facts: HostFacts) -> dict[str, Any]:
    nvml = facts.boot.nvml
    return {
        "os": facts.os.pretty_name if facts.os else None,
        "kernel": facts.boot.kernel,
        "gpus": [g.model.name for g in facts.hardware.gpus],
        "driver": nvml.driver_version if isinstance(nvml, NvmlOk) else None,
        "driver_cuda": nvml.cuda_driver_version if isinstance(nvml, NvmlOk) else None,
    }


def to_json(report: Report, facts: HostFacts) -> dict[str, Any]:
    return {
        "schema": JSON_SCHEMA,
        "status": report.status,
        "exit_code": report.exit_code,
        "summary": report.summary,
        "host": host_summary(facts),
        "findings": to_jsonable(report.findings),
        "unread": list(report.unread),
    }
