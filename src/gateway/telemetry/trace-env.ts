/**
 * Whether the gateway starts an OpenTelemetry SDK, decided from the standard `OTEL_*` environment
 * alone (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/). Pure:
 * the environment is a parameter so the decision is testable without touching `process.env`.
 *
 * Tracing is opt-in by endpoint: the SDK's own default (export to localhost:4318 whenever it is
 * loaded) would make every gateway without a collector retry failed exports forever, so without
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` nothing is started and the
 * request path runs against the API's no-op tracer.
 */

export type TraceEnv = Readonly<Record<string, string | undefined>>;

export interface TracingDecision {
  readonly enabled: boolean;
  /** One line for the startup log: where spans go, or why tracing is off. */
  readonly reason: string;
  /** Set when tracing starts with a setting it does not honour (logged as a warning). */
  readonly warning: string | undefined;
  /** `service.name` to force on the resource; undefined when the environment already names it. */
  readonly serviceName: string | undefined;
}

export const DEFAULT_SERVICE_NAME = 'gateway';

/** The only encoding the installed OTLP/HTTP trace exporter sends. */
const EXPORTER_PROTOCOL = 'http/json';

const value = (env: TraceEnv, name: string): string | undefined => {
  const raw = env[name]?.trim();
  return raw === undefined || raw === '' ? undefined : raw;
};

const list = (env: TraceEnv, name: string): string[] =>
  (value(env, name) ?? '')
    .split(',')
    .map((item) => item.trim().toLowerCase())
    .filter((item) => item !== '');

export function tracingDecision(env: TraceEnv): TracingDecision {
  const off = (reason: string): TracingDecision => ({
    enabled: false,
    reason,
    warning: undefined,
    serviceName: undefined,
  });
  // The specification's boolean parsing: only a case-insensitive "true" is true.
  if (value(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return off('OTEL_SDK_DISABLED is true');

  const exporters = list(env, 'OTEL_TRACES_EXPORTER');
  if (exporters.includes('none')) return off('OTEL_TRACES_EXPORTER is none');
  const foreign = exporters.filter((name) => name !== 'otlp');
  if (foreign.length > 0) {
    return off(`OTEL_TRACES_EXPORTER=${foreign.join(',')} is not supported (only otlp)`);
  }

  const endpoint =
    value(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') ?? value(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if (endpoint === undefined) return off('no OTLP endpoint configured');

  const protocol =
    value(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? value(env, 'OTEL_EXPORTER_OTLP_PROTOCOL');
  return {
    enabled: true,
    reason: `exporting spans over OTLP/HTTP to ${redactUserinfo(endpoint)}`,
    warning:
      protocol === undefined || protocol === EXPORTER_PROTOCOL
        ? undefined
        : `OTLP protocol ${protocol} is not supported for traces; sending ${EXPORTER_PROTOCOL} to the same endpoint`,
    serviceName: serviceNameOverride(env),
  };
}

/**
 * `OTEL_SERVICE_NAME` wins, then a `service.name` in `OTEL_RESOURCE_ATTRIBUTES` (both read by the
 * SDK's environment detector), and only then the gateway's default, which replaces the SDK's
 * `unknown_service:node`.
 */
export function serviceNameOverride(env: TraceEnv): string | undefined {
  const explicit = value(env, 'OTEL_SERVICE_NAME');
  if (explicit !== undefined) return explicit;
  const attributes = value(env, 'OTEL_RESOURCE_ATTRIBUTES') ?? '';
  const named = attributes.split(',').some((pair) => pair.split('=')[0]?.trim() === 'service.name');
  return named ? undefined : DEFAULT_SERVICE_NAME;
}

/** An endpoint for a log line: credentials in the URL are not printed. */
function redactUserinfo(endpoint: string): string {
  try {
    const url = new URL(endpoint);
    if (url.username === '' && url.password === '') return endpoint;
    url.username = '';
    url.password = '';
    return url.toString();
  } catch {
    return endpoint;
  }
}
