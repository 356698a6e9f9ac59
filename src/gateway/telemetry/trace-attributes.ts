/**
 * The OpenTelemetry semantic-convention attribute names the gateway's spans use, written out.
 * `@opentelemetry/semantic-conventions` exports the same constants, but its `incubating` entry
 * (where the GenAI names still live) is one module of several thousand constants, about 2 MB of
 * source kept in memory by every process that imports it; the gateway names 13 of them.
 * test/telemetry/trace-attributes.test.ts checks each value against the package.
 */

// Stable (`@opentelemetry/semantic-conventions`).
export const ATTR_ERROR_TYPE = 'error.type';
export const ATTR_HTTP_REQUEST_METHOD = 'http.request.method';
export const ATTR_HTTP_REQUEST_RESEND_COUNT = 'http.request.resend_count';
export const ATTR_HTTP_RESPONSE_STATUS_CODE = 'http.response.status_code';
export const ATTR_HTTP_ROUTE = 'http.route';
export const ATTR_SERVER_ADDRESS = 'server.address';
export const ATTR_SERVER_PORT = 'server.port';

// GenAI, still incubating (`@opentelemetry/semantic-conventions/incubating`).
export const ATTR_GEN_AI_OPERATION_NAME = 'gen_ai.operation.name';
export const ATTR_GEN_AI_PROVIDER_NAME = 'gen_ai.provider.name';
export const ATTR_GEN_AI_REQUEST_MODEL = 'gen_ai.request.model';
export const ATTR_GEN_AI_RESPONSE_MODEL = 'gen_ai.response.model';
export const ATTR_GEN_AI_USAGE_INPUT_TOKENS = 'gen_ai.usage.input_tokens';
export const ATTR_GEN_AI_USAGE_OUTPUT_TOKENS = 'gen_ai.usage.output_tokens';
