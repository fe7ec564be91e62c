"""Regenerate tests/rules/tidal-alerts-test.yaml after editing the rules' annotations.

The cases (series, times, labels) are written here by hand; the expected annotations are the
rule templates with the labels filled in. Run: python tests/rules/generate_rule_tests.py
"""

import re
from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parents[2]
rules: list[Obj] = yaml.safe_load((ROOT / "tidal/rules/tidal-alerts.yaml").read_text())["groups"][
    0
]["rules"]


def ann(
    alert: str, labels: dict[str, str], variant: int = 0, value: str | None = None
) -> dict[str, str]:
    """The rule's annotations with its label (and value) templates filled in."""
    rule = [r for r in rules if r.get("alert") == alert][variant]
    out = {}
    for key, text in rule["annotations"].items():
        text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m.group(1)], text)
        if value is not None:
            text = re.sub(r"\{\{ \$value \| humanizeDuration \}\}", value, text)
            text = text.replace("{{ $value }}", value)
        out[key] = text.strip()
    return out


S = "team-a"
TEAM = "ml-serving"  # tidal_schedule_info's team for S


def alert(name: str, variant: int = 0, value: str | None = None, **labels: str) -> Obj:
    """One expected alert; its team is the schedule's (or "(all)" for fleet-wide alerts)."""
    labels.setdefault("team", "(all)" if labels.get("schedule") == "(all)" else TEAM)
    return {"exp_labels": labels, "exp_annotations": ann(name, labels, variant, value)}


def s(metric: str, inst: str, values: str, **labels: str) -> Obj:
    """One input series of instance `inst`."""
    lbl = ",".join(f'{k}="{v}"' for k, v in {"instance": inst, **labels}.items())
    return {"series": f"{metric}{{{lbl}}}", "values": values}


tests: list[Obj] = []


def case(
    comment: str, series: list[Obj], checks: list[Obj], interval: str = "1m", info: bool = True
) -> None:
    """One promtool test case; with `info`, replica a exports S's team and file throughout."""
    if info:
        series = [
            *series,
            s(
                "tidal_schedule_info",
                "a",
                "1x3000",
                schedule=S,
                team=TEAM,
                file="schedules/team-a.yaml",
            ),
        ]
    tests.append(
        {"name": comment, "interval": interval, "input_series": series, "alert_rule_test": checks}
    )


def chk(t: str, name: str, alerts: list[Obj]) -> Obj:
    """The alerts expected at one evaluation time."""
    return {"eval_time": t, "alertname": name, "exp_alerts": alerts}


# --- TidalWaveFailed
W: Obj = dict(schedule=S, window="night")
WR: Obj = dict(W, reason="timeout")
lf, ls = "tidal_last_wave_failure_timestamp_seconds", "tidal_last_success_timestamp_seconds"


def wf() -> Obj:
    return alert("TidalWaveFailed", severity="critical", **WR)


case(
    "TidalWaveFailed: the leader's failure is newer than its last success; standby exports 0",
    [
        s(lf, "a", "0x9 600x30", **WR),
        s(ls, "a", "100x40", **W),
        s(lf, "b", "0x40", **WR),
        s(ls, "b", "0x40", **W),
    ],
    [
        chk("5m", "TidalWaveFailed", []),
        chk("15m", "TidalWaveFailed", [wf()]),
        chk("39m", "TidalWaveFailed", [wf()]),
    ],
)
case(
    "TidalWaveFailed: quiet once the window succeeds again, and while all export 0",
    [
        s(lf, "a", "0x9 600x30", **WR),
        s(ls, "a", "100x19 1200x20", **W),
        s(lf, "b", "0x40", **WR),
        s(ls, "b", "0x40", **W),
    ],
    [
        chk("5m", "TidalWaveFailed", []),
        chk("15m", "TidalWaveFailed", [wf()]),
        chk("25m", "TidalWaveFailed", []),
    ],
)
case(
    "TidalWaveFailed: still fires after the failing leader's series disappear (new leader at 0)",
    [
        s(lf, "a", "0x9 600 600 stale", **WR),
        s(ls, "a", "100x11 stale", **W),
        s(lf, "b", "0x60", **WR),
        s(ls, "b", "0x40 2500x20", **W),
    ],
    [chk("30m", "TidalWaveFailed", [wf()]), chk("45m", "TidalWaveFailed", [])],
)

# --- TidalSwitchRefused
RR: Obj = dict(W, reason="policy_invalid")
lr = "tidal_last_switch_refused_timestamp_seconds"


def sr() -> Obj:
    return alert("TidalSwitchRefused", severity="critical", **RR)


case(
    "TidalSwitchRefused: a first night refused pages (never succeeded: last success 0); "
    "the standby exports nothing",
    [s(lr, "a", "_x9 600x30", **RR), s(ls, "a", "0x40", **W), s(ls, "b", "0x40", **W)],
    [chk("5m", "TidalSwitchRefused", []), chk("15m", "TidalSwitchRefused", [sr()])],
)
case(
    "TidalSwitchRefused: quiet once a switch to the window succeeds, even after the refusing "
    "replica's series disappear",
    [
        s(lr, "a", "_x9 600x10 stale", **RR),
        s(ls, "a", "0x19 1200 stale", **W),
        s(ls, "b", "0x19 1200x20", **W),
    ],
    [chk("15m", "TidalSwitchRefused", [sr()]), chk("30m", "TidalSwitchRefused", [])],
)

# --- TidalSwitchOverdue (10m steps; period one day)
OV: Obj = dict(schedule=S, window="night")
per = "tidal_window_period_seconds"
case(
    "TidalSwitchOverdue: no success for a day and 30 minutes; the standby's 0 does not count",
    [
        s(ls, "a", "100x200", **OV),
        s(ls, "b", "0x200", **OV),
        s(per, "a", "86400x200", **OV),
        s(per, "b", "86400x200", **OV),
    ],
    [
        chk("24h", "TidalSwitchOverdue", []),
        chk(
            "25h",
            "TidalSwitchOverdue",
            [alert("TidalSwitchOverdue", value="1d 0h 58m 20s", severity="warning", **OV)],
        ),
    ],
    interval="10m",
)
case(
    "TidalSwitchOverdue: quiet when the window succeeded again within its period",
    [
        s(ls, "a", "100x143 86500x56", **OV),
        s(ls, "b", "0x200", **OV),
        s(per, "a", "86400x200", **OV),
        s(per, "b", "86400x200", **OV),
    ],
    [chk("30h", "TidalSwitchOverdue", [])],
    interval="10m",
)
case(
    "TidalSwitchOverdue: quiet for a window that never succeeded (standbys and leader at 0)",
    [s(ls, "a", "0x200", **OV), s(ls, "b", "0x200", **OV), s(per, "a", "86400x200", **OV)],
    [chk("30h", "TidalSwitchOverdue", [])],
    interval="10m",
)
case(
    "TidalSwitchOverdue: a series that disappeared still pages once overdue",
    [
        s(ls, "a", "100x20 stale", **OV),
        s(per, "a", "86400x20 stale", **OV),
        s("tidal_leader", "b", "0x200"),
    ],
    [
        chk(
            "25h",
            "TidalSwitchOverdue",
            [
                alert(
                    "TidalSwitchOverdue", 1, severity="warning", schedule="(all)", window="(all)"
                ),
                alert("TidalSwitchOverdue", value="1d 0h 58m 20s", severity="warning", **OV),
            ],
        )
    ],
    interval="10m",
)
ALL: Obj = {"schedule": "(all)", "window": "(all)"}
case(
    "TidalSwitchOverdue: absent() fires when no replica exports last-success at all",
    [s("tidal_leader", "a", "1x10")],
    [
        chk("10m", "TidalSwitchOverdue", []),
        chk(
            "20m", "TidalSwitchOverdue", [alert("TidalSwitchOverdue", 1, severity="warning", **ALL)]
        ),
    ],
)

# --- TidalFloorBreached
F: Obj = dict(schedule=S, cluster="cluster-b")


def fb() -> Obj:
    return alert("TidalFloorBreached", severity="critical", **F)


case(
    "TidalFloorBreached: a breach counted by the leader fires; the standby's 0 does not",
    [
        s("tidal_floor_breaches_total", "a", "0 0 1x100", **F),
        s("tidal_floor_breaches_total", "b", "0x102", **F),
    ],
    [
        chk("1m", "TidalFloorBreached", []),
        chk("5m", "TidalFloorBreached", [fb()]),
        chk("90m", "TidalFloorBreached", []),
    ],
)
case(
    "TidalFloorBreached: quiet with no breach; fires after the breaching series disappears",
    [
        s("tidal_floor_breaches_total", "a", "0x10 1 stale", **F),
        s("tidal_floor_breaches_total", "b", "0x100", **F),
    ],
    [chk("9m", "TidalFloorBreached", []), chk("20m", "TidalFloorBreached", [fb()])],
)

# --- TidalScheduleConfigInvalid
V: Obj = dict(file="schedules/team-a.yaml")


def ci() -> Obj:
    return alert("TidalScheduleConfigInvalid", severity="warning", schedule=S, **V)


case(
    "TidalScheduleConfigInvalid: fires after 5m when any replica fails to load the file",
    [
        s("tidal_schedule_config_valid", "a", "1 1 0x20", **V),
        s("tidal_schedule_config_valid", "b", "1 1 1 0x20", **V),
    ],
    [chk("5m", "TidalScheduleConfigInvalid", []), chk("8m", "TidalScheduleConfigInvalid", [ci()])],
)
case(
    "TidalScheduleConfigInvalid: quiet when valid, and when a broken file is removed",
    [
        s("tidal_schedule_config_valid", "a", "1x30", file="schedules/team-b.yaml"),
        s("tidal_schedule_config_valid", "a", "0x10 stale", **V),
    ],
    [chk("9m", "TidalScheduleConfigInvalid", [ci()]), chk("20m", "TidalScheduleConfigInvalid", [])],
)


# --- TidalNoLeader
def nl() -> Obj:
    return alert("TidalNoLeader", severity="critical", **ALL)


case(
    "TidalNoLeader: quiet with one leader and a standby exporting 0",
    [s("tidal_leader", "a", "1x30"), s("tidal_leader", "b", "0x30")],
    [chk("20m", "TidalNoLeader", [])],
)
case(
    "TidalNoLeader: fires 5m after the leader reports 0",
    [s("tidal_leader", "a", "1 1 0x30"), s("tidal_leader", "b", "0x32")],
    [chk("6m", "TidalNoLeader", []), chk("8m", "TidalNoLeader", [nl()])],
)
case(
    "TidalNoLeader: quiet across a failover; fires when the leader's series disappears",
    [
        s("tidal_leader", "a", "1x5 stale"),
        s("tidal_leader", "b", "0x6 1x10 stale"),
        s("tidal_leader", "c", "0x40"),
    ],
    [chk("10m", "TidalNoLeader", []), chk("30m", "TidalNoLeader", [nl()])],
)
case(
    "TidalNoLeader: absent() fires when no replica is scraped at all",
    [s("tidal_schedules_loaded", "a", "1x30")],
    [chk("4m", "TidalNoLeader", []), chk("6m", "TidalNoLeader", [nl()])],
)

# --- TidalWindowMissed
M: Obj = dict(schedule=S, window="day")


def wm() -> Obj:
    return alert("TidalWindowMissed", severity="warning", **M)


case(
    "TidalWindowMissed: a missed window counted at start-up fires; the standby's 0 does not",
    [
        s("tidal_windows_missed_total", "a", "1x100", **M),
        s("tidal_windows_missed_total", "b", "0x100", **M),
    ],
    [chk("5m", "TidalWindowMissed", [wm()]), chk("90m", "TidalWindowMissed", [])],
)
case(
    "TidalWindowMissed: quiet at 0; fires on an increase even after the series disappears",
    [s("tidal_windows_missed_total", "a", "0x10 1 stale", **M)],
    [chk("9m", "TidalWindowMissed", []), chk("15m", "TidalWindowMissed", [wm()])],
)

case(
    "TidalWindowMissed: a schedule that exports no team still pages, with team (unknown)",
    [s("tidal_windows_missed_total", "a", "1x100", **M)],
    [
        chk(
            "5m",
            "TidalWindowMissed",
            [alert("TidalWindowMissed", severity="warning", team="(unknown)", **M)],
        )
    ],
    info=False,
)
case(
    "TidalScheduleConfigInvalid: a file that never loaded has schedule and team (unknown)",
    [s("tidal_schedule_config_valid", "a", "0x20", file="schedules/new.yaml")],
    [
        chk(
            "8m",
            "TidalScheduleConfigInvalid",
            [
                alert(
                    "TidalScheduleConfigInvalid",
                    severity="warning",
                    file="schedules/new.yaml",
                    schedule="(unknown)",
                    team="(unknown)",
                )
            ],
        )
    ],
)

# --- TidalScheduleBlocked
B: Obj = dict(schedule=S, reason="state_corrupt")
case(
    "TidalScheduleBlocked: fires after 5m of a blocked schedule on the leader",
    [
        s("tidal_schedule_blocked", "a", "0 0 1x30", **B),
        s("tidal_schedule_blocked", "b", "0x32", **B),
    ],
    [
        chk("5m", "TidalScheduleBlocked", []),
        chk(
            "9m", "TidalScheduleBlocked", [alert("TidalScheduleBlocked", severity="critical", **B)]
        ),
    ],
)
case(
    "TidalScheduleBlocked: quiet while every replica exports 0, and once repaired",
    [
        s("tidal_schedule_blocked", "a", "1x3 0x30", **B),
        s("tidal_schedule_blocked", "b", "0x32", **B),
    ],
    [chk("2m", "TidalScheduleBlocked", []), chk("20m", "TidalScheduleBlocked", [])],
)

# --- TidalSwitchWorkerErrors
E: Obj = dict(schedule=S)
case(
    "TidalSwitchWorkerErrors: fires when passes keep failing, quiet for a single error",
    [
        s("tidal_switch_worker_errors_total", "a", "0 1 2 3 4 5 6 7 8 9 10 10x60", **E),
        s("tidal_switch_worker_errors_total", "b", "0 0 0 0 0 0 0 0 0 0 0 1x60", **E),
    ],
    [
        chk(
            "10m",
            "TidalSwitchWorkerErrors",
            [alert("TidalSwitchWorkerErrors", severity="warning", **E)],
        ),
        chk("40m", "TidalSwitchWorkerErrors", []),
    ],
)

# --- TidalJournalLost
case(
    "TidalJournalLost: a lost run-state object fires; quiet at 0",
    [
        s("tidal_journal_lost_total", "a", "0x10 1x100", **E),
        s("tidal_journal_lost_total", "b", "0x110", **E),
    ],
    [
        chk("9m", "TidalJournalLost", []),
        chk("15m", "TidalJournalLost", [alert("TidalJournalLost", severity="critical", **E)]),
    ],
)

# --- TidalPolicyDrift
case(
    "TidalPolicyDrift: two drifted policies for 15 minutes fire; quiet once put back",
    [s("tidal_policy_drift", "a", "2x20 0x20", **E), s("tidal_policy_drift", "b", "0x40", **E)],
    [
        chk("10m", "TidalPolicyDrift", []),
        chk(
            "18m",
            "TidalPolicyDrift",
            [alert("TidalPolicyDrift", value="2", severity="warning", **E)],
        ),
        chk("35m", "TidalPolicyDrift", []),
    ],
)

# --- TidalLeftoverObjects (fleet-wide: the schedule may no longer exist)
LO: Obj = dict(kind="override", schedule="gone-team")
case(
    "TidalLeftoverObjects: overdue overrides of a removed schedule fire; quiet once swept",
    [
        s("tidal_leftover_overdue_objects", "a", "0x5 2x10 0x10", **LO),
        s("tidal_leftover_overdue_objects", "b", "0x25", **LO),
    ],
    [
        chk("3m", "TidalLeftoverObjects", []),
        chk(
            "8m",
            "TidalLeftoverObjects",
            [alert("TidalLeftoverObjects", value="2", severity="warning", team="(all)", **LO)],
        ),
        chk("20m", "TidalLeftoverObjects", []),
    ],
    info=False,
)


# --- TidalClockSkew
def cs() -> Obj:
    return alert("TidalClockSkew", severity="critical", schedule="(all)", window="(all)")


case(
    "TidalClockSkew: a replica 150 s ahead with a 30 s limit fires; 5 s does not",
    [
        s("tidal_clock_skew_seconds", "a", "5x5 150x20"),
        s("tidal_clock_skew_max_seconds", "a", "30x25"),
        s("tidal_clock_skew_seconds", "b", "-2x25"),
        s("tidal_clock_skew_max_seconds", "b", "30x25"),
    ],
    [chk("4m", "TidalClockSkew", []), chk("10m", "TidalClockSkew", [cs()])],
)
case(
    "TidalClockSkew: a clock behind counts as much as one ahead; quiet once synchronised",
    [
        s("tidal_clock_skew_seconds", "a", "-90x10 0x20"),
        s("tidal_clock_skew_max_seconds", "a", "30x30"),
    ],
    [chk("8m", "TidalClockSkew", [cs()]), chk("25m", "TidalClockSkew", [])],
)

doc = {
    "rule_files": ["../../tidal/rules/tidal-alerts.yaml"],
    "evaluation_interval": "1m",
    "tests": tests,
}
hdr = (
    "# promtool unit tests for tidal/rules/tidal-alerts.yaml: for each alert a firing and a\n"
    "# quiet case, a standby exporting 0 and a series that disappears.\n"
    "# Run: promtool test rules tests/rules/tidal-alerts-test.yaml\n"
)
(ROOT / "tests/rules/tidal-alerts-test.yaml").write_text(
    hdr + yaml.safe_dump(doc, sort_keys=False, width=100, allow_unicode=True)
)
