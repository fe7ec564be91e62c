"""Render the differential tables of docs/fidelity.md from the JSON the target-parametrised
scenarios write with `pytest --karmada=both --fidelity-out DIR`.

`python -m tools.realkarmada.fidelity DIR` prints Markdown: per scenario and phase, per wave,
each workload's (assigned/ready in cluster-a · cluster-b) on the emulator and on real Karmada
when the wave finished, the final placement, and tidal plan's prediction."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

CLUSTERS = ("cluster-a", "cluster-b")


def _cell(split: dict[str, list[int]] | None) -> str:
    if not split:
        return "—"
    return " · ".join(f"{split.get(c, [0, 0])[0]}/{split.get(c, [0, 0])[1]}" for c in CLUSTERS)


def _pred(pred: dict[str, int] | None) -> str:
    if pred is None:
        return "—"
    return " · ".join(str(pred.get(c, 0)) for c in CLUSTERS)


def _short(workload: str) -> str:
    return workload.rsplit("/", 1)[-1]


def render(directory: Path) -> str:
    runs: dict[str, dict[str, Any]] = {}
    for path in sorted(directory.glob("*.json")):
        doc = json.loads(path.read_text())
        runs.setdefault(doc["scenario"], {}).setdefault(doc["target"], {}).update(doc)
    out: list[str] = []
    for scenario, by_target in sorted(runs.items()):
        emu, real = by_target.get("emulator", {}), by_target.get("real", {})
        out.append(f"#### {scenario}\n")
        phases = [k for k in ("night", "day") if k in emu or k in real]
        for phase in phases:
            e, r = emu.get(phase, {}), real.get(phase, {})
            out.append(
                f"**{phase}** — emulator {e.get('seconds', '—')} s (emulator clock), "
                f"real {r.get('seconds', '—')} s; cells: assigned/ready in "
                "cluster-a · cluster-b\n"
            )
            out.append(
                "| wave | workload | emulator | real | plan (emulator) | plan (real) | same |"
            )
            out.append("|---|---|---|---|---|---|---|")
            ewaves, rwaves = e.get("waves", []), r.get("waves", [])
            for i in range(max(len(ewaves), len(rwaves))):
                ew = ewaves[i] if i < len(ewaves) else {}
                rw = rwaves[i] if i < len(rwaves) else {}
                names = ew.get("workloads") or rw.get("workloads") or []
                for name in names:
                    ec = _cell(ew.get("placements", {}).get(name))
                    rc = _cell(rw.get("placements", {}).get(name))
                    ep = _pred(e.get("predicted", {}).get(name))
                    rp = _pred(r.get("predicted", {}).get(name))
                    final = r.get("final", {}).get(name)
                    if (
                        final
                        and rp != "—"
                        and rp != " · ".join(str(final.get(c, [0, 0])[0]) for c in CLUSTERS)
                    ):
                        rp = f"**{rp}** (real ended {_pred({c: v[0] for c, v in final.items()})})"
                    out.append(
                        f"| {i + 1} | {_short(name)} | {ec} | {rc} | {ep} | {rp} | "
                        f"{'yes' if ec == rc else '**no**'} |"
                    )
            out.append("")
        for key in ("halt", "rollback"):
            if key in emu or key in real:
                e, r = emu.get(key, {}), real.get(key, {})
                out.append(
                    f"**onFailure {key}**: result emulator `{e.get('result')}`, real "
                    f"`{r.get('result')}`; breach on {e.get('breach')} / "
                    f"{r.get('breach')}\n"
                )
        if "waves_by_replica" in emu or "waves_by_replica" in real:
            out.append(
                f"waves completed by replica: emulator {emu.get('waves_by_replica')}, "
                f"real {real.get('waves_by_replica')}\n"
            )
    return "\n".join(out)


if __name__ == "__main__":
    print(render(Path(sys.argv[1])))
