"""Upstream manifests read from the Go module cache at run time (never copied into the repo):
Karmada's CRDs and webhook configurations, kwok's stages."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

from tools.realkarmada.versions import KARMADA_MODULE, KWOK, KWOK_MODULE, module_dir

# The CRDs that upstream's kustomization patches with the conversion webhook.
CONVERTED_CRDS = ("resourcebindings.work.karmada.io", "clusterresourcebindings.work.karmada.io")
_WEBHOOK_HOST = "https://karmada-webhook.karmada-system.svc:443/"


def karmada_crds(version: str, webhook_url: str, ca_pem: bytes) -> list[dict[str, Any]]:
    """Every CRD of the release's chart, the binding CRDs converting through the webhook."""
    root = module_dir(KARMADA_MODULE, version) / "charts" / "karmada" / "_crds" / "bases"
    crds = [doc for path in sorted(root.rglob("*.yaml")) for doc in _docs(path)]
    for crd in crds:
        if crd["metadata"]["name"] in CONVERTED_CRDS:
            crd["spec"]["conversion"] = {
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": {"url": f"{webhook_url}/convert", "caBundle": _b64(ca_pem)},
                    "conversionReviewVersions": ["v1"],
                },
            }
    return crds


def karmada_webhook_configurations(
    version: str, webhook_url: str, ca_pem: bytes
) -> list[dict[str, Any]]:
    """The release's mutating/validating configurations, pointed at the local webhook."""
    deploy = module_dir(KARMADA_MODULE, version) / "artifacts" / "deploy"
    path = deploy / "webhook-configuration.yaml"
    text = path.read_text().replace(_WEBHOOK_HOST, f"{webhook_url}/")
    text = text.replace("{{caBundle}}", _b64(ca_pem))
    return list(yaml.safe_load_all(text))


def kwok_stages(pod_jitter_ms: int | None = None) -> list[dict[str, Any]]:
    """Node initialise + lease heartbeat, and the 'general' pod lifecycle whose stages delay
    each pod a second plus up to five of jitter (`pod_jitter_ms`: that jitter instead)."""
    root = module_dir(KWOK_MODULE, KWOK) / "kustomize" / "stage"
    paths = [
        root / "node" / "fast" / "node-initialize.yaml",
        root / "node" / "heartbeat-with-lease" / "node-heartbeat-with-lease.yaml",
        *sorted((root / "pod" / "general").glob("pod-*.yaml")),
    ]
    docs = [doc for p in paths for doc in _docs(p)]
    if pod_jitter_ms is not None:
        for doc in docs:
            delay = (doc.get("spec") or {}).get("delay") or {}
            if doc["metadata"]["name"].startswith("pod-") and "jitterDurationMilliseconds" in delay:
                delay["jitterDurationMilliseconds"] = pod_jitter_ms
    return docs


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _b64(pem: bytes) -> str:
    return base64.b64encode(pem).decode()
