import { describe, expect, it } from 'vitest';
import { tracingDecision, type TraceEnv } from '../../src/gateway/telemetry/tracing.js';

const ENDPOINT = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };

describe('tracingDecision', () => {
  it.each<[string, TraceEnv]>([
    ['the general endpoint', ENDPOINT],
    ['the traces endpoint', { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }],
    ['otlp named explicitly', { ...ENDPOINT, OTEL_TRACES_EXPORTER: 'otlp' }],
    ['OTEL_SDK_DISABLED other than "true"', { ...ENDPOINT, OTEL_SDK_DISABLED: 'false' }],
    ['OTEL_SDK_DISABLED not a boolean', { ...ENDPOINT, OTEL_SDK_DISABLED: '1' }],
  ])('on with %s', (_, env) => {
    expect(tracingDecision(env).enabled).toBe(true);
  });

  it.each<[string, TraceEnv, string]>([
    ['an empty environment', {}, 'no OTLP endpoint configured'],
    [
      'blank endpoints',
      { OTEL_EXPORTER_OTLP_ENDPOINT: '  ', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '' },
      'no OTLP endpoint',
    ],
    ['OTEL_SDK_DISABLED=true', { ...ENDPOINT, OTEL_SDK_DISABLED: 'True' }, 'OTEL_SDK_DISABLED'],
    [
      'OTEL_TRACES_EXPORTER=none',
      { ...ENDPOINT, OTEL_TRACES_EXPORTER: 'none' },
      'OTEL_TRACES_EXPORTER is none',
    ],
    ['none among others', { ...ENDPOINT, OTEL_TRACES_EXPORTER: 'otlp, none' }, 'is none'],
    [
      'an exporter other than otlp',
      { ...ENDPOINT, OTEL_TRACES_EXPORTER: 'zipkin' },
      'zipkin is not supported',
    ],
    ['only a service name', { OTEL_SERVICE_NAME: 'gw' }, 'no OTLP endpoint'],
  ])('off with %s', (_, env, reason) => {
    const decision = tracingDecision(env);
    expect(decision.enabled).toBe(false);
    expect(decision.reason).toContain(reason);
  });

  it('the traces endpoint is the one reported when both are set; credentials are not printed', () => {
    const decision = tracingDecision({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://general:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://user:secret@traces:4318/v1/traces',
    });
    expect(decision.reason).toBe('exporting spans over OTLP/HTTP to https://traces:4318/v1/traces');
  });

  it('service name: gateway by default; OTEL_SERVICE_NAME or a service.name resource attribute win', () => {
    expect(tracingDecision(ENDPOINT).serviceName).toBe('gateway');
    expect(tracingDecision({ ...ENDPOINT, OTEL_SERVICE_NAME: 'edge-gw' }).serviceName).toBe('edge-gw');
    // Left to the SDK's environment detector, which reads the attribute.
    expect(
      tracingDecision({
        ...ENDPOINT,
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod, service.name=gw-a',
      }).serviceName,
    ).toBeUndefined();
    expect(
      tracingDecision({ ...ENDPOINT, OTEL_RESOURCE_ATTRIBUTES: 'service.namespace=x' }).serviceName,
    ).toBe('gateway');
  });

  it('a protocol other than http/json is named in a warning; tracing still starts', () => {
    expect(
      tracingDecision({ ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }).warning,
    ).toBeUndefined();
    const grpc = tracingDecision({ ...ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' });
    expect(grpc.enabled).toBe(true);
    expect(grpc.warning).toContain('grpc');
  });
});
