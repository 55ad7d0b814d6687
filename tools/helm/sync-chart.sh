#!/usr/bin/env bash
# Copy what charts/blueprint-operator shares with manifests/ after one of them changed; then
# `cargo test --test helm_chart` says whether the two still make the same objects.
#   manifests/crds/actionschedule.yaml        -> chart crds/
#   manifests/kanister-crds/kanister-*.yaml   -> chart files/kanister-crds/
#   manifests/controller/rbac.yaml            -> chart templates/controller-rbac.yaml (names templated)
#   chart files/prometheus-rules.yaml, dashboards/blueprint-operator.json -> manifests/monitoring/
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
chart="$root/charts/blueprint-operator"
m="$root/manifests"
cp "$m/crds/actionschedule.yaml" "$chart/crds/"
cp "$m"/kanister-crds/kanister-*.yaml "$chart/files/kanister-crds/"
cp "$chart/dashboards/blueprint-operator.json" "$m/monitoring/"
python3 - "$m" "$chart" <<'PY'
import sys
m, chart = sys.argv[1], sys.argv[2]
src = open(f"{m}/controller/rbac.yaml").read()
src = src.replace("name: blueprint-operator-controller", "name: {{ $fullname }}-controller")
src = "\n".join(
    "  namespace: {{ .Release.Namespace }}" if l == "  namespace: blueprint-operator" else l
    for l in src.split("\n"))
out = ['{{- $fullname := include "bpo.fullname" . -}}',
       '{{- $labels := include "bpo.labels" (dict "ctx" . "component" "controller") -}}']
lines = src.split("\n")
i = 0
while i < len(lines):
    out.append(lines[i])
    if lines[i] == "metadata:":
        j = i + 1
        block = []
        while j < len(lines) and lines[j].startswith("  "):
            block.append(lines[j]); j += 1
        if any(b.startswith("  labels:") for b in block):
            for b in block:
                out.append(b)
                if b.startswith("  labels:"):
                    out.append("    {{- $labels | nindent 4 }}")
        else:
            out.extend(block + ["  labels:", "    {{- $labels | nindent 4 }}"])
        i = j
        continue
    i += 1
open(f"{chart}/templates/controller-rbac.yaml", "w").write("\n".join(out))

rules = open(f"{chart}/files/prometheus-rules.yaml").read()
body = "\n".join("  " + l if l else l for l in rules.split("\n") if not l.startswith("#"))
open(f"{m}/monitoring/prometheusrule.yaml", "w").write(
    "# The alerts; the same as the chart's files/prometheus-rules.yaml (tests/helm_chart.rs checks).\n"
    "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n"
    "  name: blueprint-operator\n  namespace: blueprint-operator\n"
    "  labels: {app.kubernetes.io/name: blueprint-operator, app.kubernetes.io/component: monitoring}\n"
    "spec:\n" + body.rstrip(" ") )
PY
