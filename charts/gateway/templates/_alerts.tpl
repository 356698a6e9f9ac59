{{/*
Alert rules (the `groups` of a Prometheus rule file). Metric names follow gateway.metricsPrefix.
Unit-tested with promtool in test/chart (charts/gateway/tests/promtool/alerts-test.yaml).

Labelled counters appear at their first increment, so "increased in the last 15 minutes" is written
as `now - (15 minutes ago, or 0 when the series did not exist yet)` rather than with increase(),
which would miss the first event of a series.
*/}}
{{- define "gateway.alertGroups" -}}
{{- $p := include "gateway.metricsPrefix" . }}
{{- $r := .Values.metrics.prometheusRule }}
groups:
  - name: gateway
    rules:
      - alert: GatewayConfigReloadFailing
        expr: |
          max by (namespace, pod) ({{ $p }}_config_last_reload_successful) == 0
        for: 2m
        labels:
          severity: warning
        annotations:
          summary: {{ `Gateway {{ $labels.namespace }}/{{ $labels.pod }} rejects its configuration file` | quote }}
          description: {{ `The gateway refuses the configuration file on disk and keeps serving the last good one. Run "gateway validate" on the ConfigMap content; the pod log line "configuration reload rejected" lists every error with its JSON path. The alert clears when a valid configuration loads.` | quote }}
      - alert: GatewayConfigDivergent
        expr: |
          count by (namespace, job) (count by (namespace, job, hash) ({{ $p }}_config_info)) > 1
        for: 10m
        labels:
          severity: warning
        annotations:
          summary: {{ `Gateway pods of {{ $labels.namespace }}/{{ $labels.job }} serve {{ $value }} different configurations` | quote }}
          description: {{ `Pods behind one job report different configuration hashes (gateway_config_info) for 10 minutes. A ConfigMap update reaches every pod within about 90 seconds; longer means some pods rejected it or cannot read it.` | quote }}
      - alert: GatewayHighErrorRatio
        expr: |
          (
            sum by (namespace, model) (rate({{ $p }}_requests_total{outcome=~"upstream_error|upstream_cut|timeout|internal_error", status!~"4.."}[5m]))
            /
            sum by (namespace, model) (rate({{ $p }}_requests_total[5m]))
          ) > {{ $r.errorRatioThreshold }}
          and on (namespace, model)
          sum by (namespace, model) (rate({{ $p }}_requests_total[5m])) > {{ $r.minRequestRate }}
        for: 10m
        labels:
          severity: critical
        annotations:
          summary: {{ `Gateway alias {{ $labels.model }} in {{ $labels.namespace }} fails {{ $value | humanizePercentage }} of requests` | quote }}
          description: {{ `More than the configured share of requests on this alias failed: server errors (upstream errors passed through, unreachable upstreams, first-token timeouts) or streams cut after they started, which a 200 status hides (outcome upstream_cut, an error inside a 200). Check gateway_requests_total by outcome and provider, and gateway_upstream_errors_total by reason.` | quote }}
      - alert: GatewayHighRejectionRatio
        expr: |
          (
            sum by (namespace, model, code) (rate({{ $p }}_rejections_total[5m]))
            / on (namespace, model) group_left
            sum by (namespace, model) (rate({{ $p }}_requests_total[5m]))
          ) > {{ $r.rejectionRatioThreshold }}
          and on (namespace, model)
          sum by (namespace, model) (rate({{ $p }}_requests_total[5m])) > {{ $r.minRequestRate }}
        for: 10m
        labels:
          severity: warning
        annotations:
          summary: {{ `Gateway rejects {{ $value | humanizePercentage }} of requests to {{ $labels.model }} in {{ $labels.namespace }} with code "{{ $labels.code }}"` | quote }}
          description: {{ `The gateway itself refuses this share of the alias's requests (limits, authentication, strict-mode checks, unknown model). Limits that are too tight or a misbehaving client are the usual causes.` | quote }}
      - alert: GatewayAimdShareAtFloor
        expr: |
          max by (namespace, model, pool) (
            {{ $p }}_provider_share
            and on (namespace, pod, model, pool)
            ({{ $p }}_aimd_active == 1)
          ) <= {{ addf $r.shareFloor 0.001 }}
        for: 15m
        labels:
          severity: warning
        annotations:
          summary: {{ `The preferred provider of pool {{ $labels.pool }} ({{ $labels.namespace }}) is held at its share floor` | quote }}
          description: {{ `On every pod the share controller has cut the preferred provider's share to its floor for 15 minutes: its first-token latency breaches the budget or it answers with overload statuses. Traffic goes to the alternates.` | quote }}
      - alert: GatewayShutdownForcedConnections
        expr: |
          sum by (namespace, pod) (
            {{ $p }}_shutdown_forced_connections_total
            - ({{ $p }}_shutdown_forced_connections_total offset 15m or {{ $p }}_shutdown_forced_connections_total * 0)
          ) > 0
        labels:
          severity: warning
        annotations:
          summary: {{ `Gateway {{ $labels.namespace }}/{{ $labels.pod }} cut {{ $value }} connections at its drain deadline` | quote }}
          description: {{ `Streams were still running when gateway.shutdownTimeoutSecs expired during a shutdown, and were cut. Raise the drain timeout (the chart raises terminationGracePeriodSeconds with it) or look for streams that never end. The pod exits right after, so a scrape may miss this counter: the exit code 1 and the log line "drain timeout exceeded" are the authoritative record.` | quote }}
      - alert: GatewayBudgetNearlySpent
        expr: |
          max by (namespace, job, scope, budget, window) (
            {{ $p }}_budget_spent
            / ignoring (window) group_left (window)
            {{ $p }}_budget_limit
          ) >= {{ $r.budgetWarnShare }}
        for: 5m
        labels:
          severity: warning
        annotations:
          summary: {{ `Spend budget of {{ $labels.scope }} "{{ $labels.budget }}" in {{ $labels.namespace }} is {{ $value | humanizePercentage }} spent (window {{ $labels.window }})` | quote }}
          description: {{ `The spending of the current window has reached metrics.prometheusRule.budgetWarnShare of the budget's configured limit. Once nothing is left, the gateway refuses the requests the budget covers until the window renews. gateway_cost_total by account and key shows who spends it.` | quote }}
      - alert: GatewayBudgetExhausted
        expr: |
          max by (namespace, job, scope, budget, window) (
            {{ $p }}_budget_spent
            / ignoring (window) group_left (window)
            {{ $p }}_budget_limit
          )
          and on (namespace, job, scope, budget)
          (
            {{ $p }}_budget_spent >= ignoring (window) {{ $p }}_budget_limit
            or on (namespace, job, scope, budget)
            sum by (namespace, job, scope, budget) (
              {{ $p }}_budget_refusals_total{code="budget_exceeded"}
              - ({{ $p }}_budget_refusals_total{code="budget_exceeded"} offset 15m or {{ $p }}_budget_refusals_total{code="budget_exceeded"} * 0)
            ) > 0
          )
        for: 2m
        labels:
          severity: critical
        annotations:
          summary: {{ `Spend budget of {{ $labels.scope }} "{{ $labels.budget }}" in {{ $labels.namespace }} refuses requests: {{ $value | humanizePercentage }} spent (window {{ $labels.window }})` | quote }}
          description: {{ `The budget has no room left: its spending reached the configured limit, or the gateway refused requests on it in the last 15 minutes because what was spent plus what requests in flight reserve (gateway_budget_reserved) left no room for them. The requests the budget covers are refused until the window renews (a calendar window at its next start, a rolling one as older spending leaves it) or the limit is raised.` | quote }}
      {{- with $r.extraRules }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
{{- end }}
