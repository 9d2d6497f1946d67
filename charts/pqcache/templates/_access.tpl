{{/*
pqcache.accessArgs: the manager's and the agent's policy on whose identity reads a tenant's bucket and
which addresses a tenant's endpoint may resolve to (values ambientCredentials and endpoints;
docs/security.md). The denied ranges are endpoints.deniedCIDRs plus the cluster's own ranges
(endpoints.serviceCIDRs, endpoints.podCIDRs); endpoints.allowedCIDRs wins over them.
*/}}
{{- define "pqcache.accessArgs" -}}
{{- with .Values.ambientCredentials.namespaces }}
- --ambient-credentials-namespaces={{ join "," . }}
{{- end }}
{{- $denied := concat (.Values.endpoints.deniedCIDRs | default list) (.Values.endpoints.serviceCIDRs | default list) (.Values.endpoints.podCIDRs | default list) }}
{{- with $denied }}
- --denied-cidrs={{ join "," . }}
{{- end }}
{{- with .Values.endpoints.allowedCIDRs }}
- --allowed-cidrs={{ join "," . }}
{{- end }}
{{- end }}
