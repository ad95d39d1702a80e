"""Reading what ``gpudoc guard --log FILE`` and the guarded job write: the one place that knows
their field names (tools/check_guard_e2e.py uses it; change it here when the guard's log changes).

The guard's log, JSON Lines, one record a line (fields this module relies on; others are kept in
``raw``):

    {"type":"decision","t_unix":..,"gpu":..,"level":..,"previous_level":..,"actions":[..],"reason":".."}
    {"type":"advice","id":..,"action":..,"sample_unix":..,"sent_unix":..}          (level optional)
    {"type":"ack","id":..,"status":..,"received_unix":..,"latency_ms":..,<details>}  (details flat,
                                                                                       or under "details")
    {"type":"signal","pid":..,"signal":"SIGSTOP"|"SIGCONT"|...}                      (t_unix optional)
    {"type":"report",...}

Missing pieces are filled where they can be: an ack without ``latency_ms`` gets it from its advice's
``sample_unix`` and its own ``received_unix``; an ack without ``action`` takes its advice's; a time
may be called ``t_unix``, ``time_unix`` or ``sent_unix``; a signal without one takes the time of
the record before it. A line that is not a JSON object is
counted in ``bad_lines``, never fatal. Standard library only.

The job's output (workloads/guard_train.py, guard_noncritical.py): ``::gpudoc {json}`` lines among
anything else; ``read_gpudoc_lines`` returns their objects in order.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

PREFIX = "::gpudoc "
ACK_FIELDS = ("type", "v", "id", "action", "status", "received_unix", "latency_ms", "details", "t_unix")


def _time(record: Dict[str, Any], *keys: str) -> Optional[float]:
    for key in keys:
        value = record.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


@dataclass
class Decision:
    t_unix: Optional[float]
    gpu: Any
    level: int
    previous_level: int
    actions: List[str]
    reason: str
    raw: Dict[str, Any]

    @property
    def escalation(self) -> bool:
        return self.level > self.previous_level


@dataclass
class AdviceSent:
    id: str
    action: str
    level: Optional[int]
    sample_unix: Optional[float]
    sent_unix: Optional[float]
    raw: Dict[str, Any]


@dataclass
class Ack:
    id: str
    action: Optional[str]
    status: str
    received_unix: Optional[float]
    latency_ms: Optional[float]
    details: Dict[str, Any]
    raw: Dict[str, Any]
    level: Optional[int] = None


@dataclass
class SignalSent:
    pid: Optional[int]
    signal: str
    t_unix: Optional[float]
    raw: Dict[str, Any]


@dataclass
class GuardLog:
    decisions: List[Decision] = field(default_factory=list)
    advice: List[AdviceSent] = field(default_factory=list)
    acks: List[Ack] = field(default_factory=list)
    signals: List[SignalSent] = field(default_factory=list)
    reports: List[Dict[str, Any]] = field(default_factory=list)
    other: List[Dict[str, Any]] = field(default_factory=list)
    bad_lines: int = 0

    def advice_by_id(self) -> Dict[str, AdviceSent]:
        return {a.id: a for a in self.advice}

    def acks_for(self, action: str) -> List[Ack]:
        return [a for a in self.acks if a.action == action]


def parse_guard_log(lines: List[str]) -> GuardLog:
    log = GuardLog()
    last_time: Optional[float] = None  # of the latest record with a time: a signal without one gets it
    for line in lines:
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except ValueError:
            log.bad_lines += 1
            continue
        if not isinstance(r, dict):
            log.bad_lines += 1
            continue
        kind = r.get("type")
        when = _time(r, "t_unix", "time_unix", "sent_unix", "received_unix")
        last_time = when if when is not None else last_time
        if kind == "decision":
            log.decisions.append(Decision(_time(r, "t_unix", "time_unix"), r.get("gpu"), int(r.get("level", 0)),
                                          int(r.get("previous_level", 0)), list(r.get("actions") or []),
                                          str(r.get("reason", "")), r))
        elif kind == "advice":
            log.advice.append(AdviceSent(str(r.get("id")), str(r.get("action")), r.get("level"),
                                         _time(r, "sample_unix"), _time(r, "sent_unix", "t_unix"), r))
        elif kind == "ack":
            details = {k: v for k, v in r.items() if k not in ACK_FIELDS}
            if isinstance(r.get("details"), dict):
                details.update(r["details"])
            log.acks.append(Ack(str(r.get("id")), r.get("action"), str(r.get("status")),
                                _time(r, "received_unix", "t_unix"), _time(r, "latency_ms"), details, r))
        elif kind == "signal":
            pid = r.get("pid")
            log.signals.append(SignalSent(pid if isinstance(pid, int) else None, str(r.get("signal")),
                                          when if when is not None else last_time, r))
        elif kind == "report":
            log.reports.append(r)
        else:
            log.other.append(r)
    sent = log.advice_by_id()
    for ack in log.acks:
        advice = sent.get(ack.id)
        if advice is None:
            continue
        ack.action = ack.action or advice.action
        ack.level = advice.level if isinstance(advice.level, int) else None
        if ack.latency_ms is None and ack.received_unix is not None and advice.sample_unix is not None:
            ack.latency_ms = (ack.received_unix - advice.sample_unix) * 1e3
    _levels_from_decisions(log)
    return log


def _levels_from_decisions(log: GuardLog) -> None:
    """An advice without a level gets the level of the last decision sent before it that lists
    its action."""
    for advice in log.advice:
        if isinstance(advice.level, int):
            continue
        when = advice.sent_unix
        for d in log.decisions:
            if advice.action in d.actions and (when is None or d.t_unix is None or d.t_unix <= when + 1e-3):
                advice.level = d.level
    by_id = log.advice_by_id()
    for ack in log.acks:
        if ack.level is None and ack.id in by_id:
            ack.level = by_id[ack.id].level


def read_guard_log(path: str) -> GuardLog:
    with open(path, encoding="utf-8", errors="replace") as f:
        return parse_guard_log(f.readlines())


def read_gpudoc_lines(path: str) -> List[Dict[str, Any]]:
    """The objects of the ``::gpudoc {json}`` lines of a job's output, in order (others skipped)."""
    out: List[Dict[str, Any]] = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.startswith(PREFIX):
                continue
            try:
                value = json.loads(line[len(PREFIX):])
            except ValueError:
                continue
            if isinstance(value, dict):
                out.append(value)
    return out


def read_json_lines(path: str) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                out.append(value)
    return out


def read_rc(path: str) -> Optional[int]:
    """An exit code a script wrote to a file, or None."""
    try:
        with open(path, encoding="utf-8") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def read_json(path: str) -> Dict[str, Any]:
    """A JSON object from a file, or {} when there is none."""
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
