import { InvalidArgumentError, Option } from 'commander';
import { redactedTarget } from './limits/redis/url.js';
import {
  DEFAULT_FAILURE_POLICIES,
  formatFailurePolicies,
  parseFailurePolicies,
  type FailurePolicies,
} from './limits/redis/policy.js';

/** A GatewayConfig object by namespace and name. */
export interface ConfigResourceReference {
  readonly namespace: string;
  readonly name: string;
}

/** Everything the standalone gateway takes from its command line and environment. */
export interface GatewayOptions {
  /** Configuration file path (`--targets` / `-f`); undefined in resource mode. */
  targets: string | undefined;
  /**
   * The GatewayConfig object the configuration is read from (resource mode, `--config-resource
   * NAMESPACE/NAME`); undefined in file mode. Exactly one of `targets` and `configResource` is set.
   */
  configResource: ConfigResourceReference | undefined;
  host: string;
  port: number;
  watch: boolean;
  metrics: boolean;
  metricsPort: number;
  metricsPrefix: string;
  shutdownDelaySecs: number;
  shutdownTimeoutSecs: number;
  sseBufferLimit: number;
  dispatchedHeader: string;
  enforceBatchInflight: boolean;
  maxBodyBytes: number;
  /** Seconds between hash-compare polls of the config file, the safety net behind the watcher. */
  configPollSecs: number;
  /** A client must send all request headers within this time. */
  headerTimeoutSecs: number;
  /** A client must send the whole request (headers and body) within this time. */
  requestTimeoutSecs: number;
  /** Idle time after which a keep-alive client connection is closed. */
  keepAliveTimeoutSecs: number;
  /** Redis URL of limits shared across replicas; undefined keeps every limit per process. */
  sharedState: string | undefined;
  /** What each limit kind decides while Redis cannot answer. */
  sharedStateFailure: FailurePolicies;
  /** Lease of a held shared slot: how long a crashed replica's slots stay counted. */
  sharedStateLeaseSecs: number;
  /** Per-call Redis budget; a slower answer is decided by the failure policy. */
  sharedStateTimeoutMs: number;
  /** Prefix of every Redis key, so deployments sharing one Redis do not share limits. */
  sharedStatePrefix: string;
  /** Where the access log goes: `stdout`, `stderr`, a file path, or `off`. */
  accessLog: string;
}

export const DEFAULT_OPTIONS: Omit<GatewayOptions, 'targets' | 'configResource'> = {
  host: '0.0.0.0',
  port: 3000,
  watch: true,
  metrics: true,
  metricsPort: 9090,
  metricsPrefix: 'gateway',
  shutdownDelaySecs: 5,
  shutdownTimeoutSecs: 300,
  sseBufferLimit: 65_536,
  dispatchedHeader: 'x-gateway-dispatched',
  enforceBatchInflight: false,
  maxBodyBytes: 32 * 1024 * 1024,
  configPollSecs: 15,
  headerTimeoutSecs: 30,
  requestTimeoutSecs: 120,
  keepAliveTimeoutSecs: 65,
  sharedState: undefined,
  sharedStateFailure: DEFAULT_FAILURE_POLICIES,
  sharedStateLeaseSecs: 30,
  sharedStateTimeoutMs: 50,
  sharedStatePrefix: 'gateway:',
  accessLog: 'stdout',
};

function integer(name: string, min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    const trimmed = value.trim();
    if (!/^\d+$/.test(trimmed))
      throw new InvalidArgumentError(`${name} must be a whole number, got "${value}".`);
    const parsed = Number(trimmed);
    if (parsed < min || parsed > max) {
      throw new InvalidArgumentError(`${name} must be between ${min} and ${max}, got ${parsed}.`);
    }
    return parsed;
  };
}

function seconds(name: string, { positive }: { positive: boolean }) {
  return (value: string): number => {
    const trimmed = value.trim();
    const parsed = Number(trimmed);
    if (trimmed === '' || !Number.isFinite(parsed)) {
      throw new InvalidArgumentError(`${name} must be a number of seconds, got "${value}".`);
    }
    if (positive ? parsed <= 0 : parsed < 0) {
      throw new InvalidArgumentError(
        `${name} must be ${positive ? 'positive' : 'zero or more'}, got ${parsed}.`,
      );
    }
    return parsed;
  };
}

function boolean(name: string) {
  return (value: string): boolean => {
    const normalized = value.trim().toLowerCase();
    if (['true', '1', 'yes', 'on'].includes(normalized)) return true;
    if (['false', '0', 'no', 'off'].includes(normalized)) return false;
    throw new InvalidArgumentError(`${name} must be true or false, got "${value}".`);
  };
}

function metricPrefix(value: string): string {
  if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(value)) {
    throw new InvalidArgumentError(
      `--metrics-prefix must be a valid metric name prefix (letters, digits and underscores, not starting with a digit), got "${value}".`,
    );
  }
  return value;
}

function headerName(value: string): string {
  const normalized = value.trim().toLowerCase();
  if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(normalized)) {
    throw new InvalidArgumentError(`--dispatched-header must be a valid HTTP header name, got "${value}".`);
  }
  return normalized;
}

/**
 * Why `url` cannot be a shared-state URL, or undefined when it can. Checked by the CLI rather than by
 * an option parser because the parser's error message would echo the value, password included.
 */
export function sharedStateUrlProblem(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return '--shared-state must be a redis:// or rediss:// URL.';
  }
  if ((parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') || parsed.hostname === '') {
    return `--shared-state must be a redis://host:port or rediss://host:port URL, got "${redactedTarget(url)}".`;
  }
  return undefined;
}

function failurePolicies(value: string): FailurePolicies {
  const parsed = parseFailurePolicies(value);
  if (!parsed.ok) {
    throw new InvalidArgumentError(
      `--shared-state-failure: ${parsed.message}; expected fail_open, fail_closed, or kind=policy items such as "fail_closed,rate=fail_open".`,
    );
  }
  return parsed.policies;
}

function accessLogTarget(value: string): string {
  const trimmed = value.trim();
  if (trimmed === '') {
    throw new InvalidArgumentError(
      '--access-log must be stdout, stderr, off or a file path, got an empty value.',
    );
  }
  return trimmed;
}

/** A Kubernetes namespace: a DNS label (RFC 1123). */
const NAMESPACE_PATTERN = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** An object name: a DNS subdomain (RFC 1123). */
const OBJECT_NAME_PATTERN = /^[a-z0-9]([-.a-z0-9]{0,251}[a-z0-9])?$/;

/** `NAMESPACE/NAME` of a GatewayConfig, checked against Kubernetes' naming rules. */
function resourceReference(value: string): ConfigResourceReference {
  const trimmed = value.trim();
  const slash = trimmed.indexOf('/');
  const namespace = slash < 0 ? '' : trimmed.slice(0, slash);
  const name = slash < 0 ? trimmed : trimmed.slice(slash + 1);
  if (slash < 0 || namespace === '' || name === '')
    throw new InvalidArgumentError(
      `--config-resource must be NAMESPACE/NAME of a GatewayConfig, got "${value}".`,
    );
  if (!NAMESPACE_PATTERN.test(namespace))
    throw new InvalidArgumentError(
      `--config-resource: namespace "${namespace}" is not a valid namespace (lowercase letters, digits and '-', at most 63, starting and ending with a letter or digit).`,
    );
  if (!OBJECT_NAME_PATTERN.test(name))
    throw new InvalidArgumentError(
      `--config-resource: name "${name}" is not a valid object name (lowercase letters, digits, '-' and '.', at most 253, starting and ending with a letter or digit).`,
    );
  return { namespace, name };
}

function keyPrefix(value: string): string {
  if (!/^[!-~]{1,64}$/.test(value)) {
    throw new InvalidArgumentError(
      `--shared-state-prefix must be 1 to 64 printable characters without spaces, got "${value}".`,
    );
  }
  return value;
}

/**
 * The flag table: one place that names each flag, its environment variable, its default and how it
 * is parsed. `--help` and docs/operations.md are generated from these descriptions.
 */
export function gatewayOptionDefinitions(): Option[] {
  const d = DEFAULT_OPTIONS;
  return [
    new Option(
      '-f, --targets <file>',
      'configuration file (JSON or YAML; bare or GatewayConfig envelope)',
    ).env('GATEWAY_TARGETS'),
    new Option(
      '--config-resource <namespace/name>',
      'take the configuration from this GatewayConfig object through the Kubernetes API instead of a file (exclusive with -f)',
    )
      .env('GATEWAY_CONFIG_RESOURCE')
      .argParser(resourceReference),
    new Option('--host <address>', 'address both listeners bind to').env('GATEWAY_HOST').default(d.host),
    new Option('--port <port>', 'proxy port (0 picks a free port)')
      .env('GATEWAY_PORT')
      .default(d.port)
      .argParser(integer('--port', 0, 65_535)),
    new Option('--watch [bool]', 'hot-reload the configuration file when it changes')
      .env('GATEWAY_WATCH')
      .default(d.watch)
      .preset('true')
      .argParser(boolean('--watch')),
    new Option('--metrics [bool]', 'serve /metrics on the admin port')
      .env('GATEWAY_METRICS')
      .default(d.metrics)
      .preset('true')
      .argParser(boolean('--metrics')),
    new Option('--metrics-port <port>', 'admin port: /metrics, /healthz, /readyz (0 picks a free port)')
      .env('GATEWAY_METRICS_PORT')
      .default(d.metricsPort)
      .argParser(integer('--metrics-port', 0, 65_535)),
    new Option('--metrics-prefix <prefix>', 'prefix of every gateway metric name')
      .env('GATEWAY_METRICS_PREFIX')
      .default(d.metricsPrefix)
      .argParser(metricPrefix),
    new Option('--shutdown-delay-secs <seconds>', 'time requests are still served after /readyz turns 503')
      .env('GATEWAY_SHUTDOWN_DELAY_SECS')
      .default(d.shutdownDelaySecs)
      .argParser(seconds('--shutdown-delay-secs', { positive: false })),
    new Option('--shutdown-timeout-secs <seconds>', 'drain deadline after admission closes; must be positive')
      .env('GATEWAY_SHUTDOWN_TIMEOUT_SECS')
      .default(d.shutdownTimeoutSecs)
      .argParser(seconds('--shutdown-timeout-secs', { positive: true })),
    new Option('--sse-buffer-limit <bytes>', 'cap on one unfinished SSE event (0 permits none)')
      .env('GATEWAY_SSE_BUFFER_LIMIT')
      .default(d.sseBufferLimit)
      .argParser(integer('--sse-buffer-limit', 0)),
    new Option('--dispatched-header <name>', 'request header that marks dispatched (batch) traffic')
      .env('GATEWAY_DISPATCHED_HEADER')
      .default(d.dispatchedHeader)
      .argParser(headerName),
    new Option('--enforce-batch-inflight [bool]', 'enforce batch_inflight_limit in this process')
      .env('GATEWAY_ENFORCE_BATCH_INFLIGHT')
      .default(d.enforceBatchInflight)
      .preset('true')
      .argParser(boolean('--enforce-batch-inflight')),
    new Option('--max-body-bytes <bytes>', 'largest request body accepted (413 above)')
      .env('GATEWAY_MAX_BODY_BYTES')
      .default(d.maxBodyBytes)
      .argParser(integer('--max-body-bytes', 1)),
    new Option('--config-poll-secs <seconds>', 'interval of the hash-compare poll behind the file watcher')
      .env('GATEWAY_CONFIG_POLL_SECS')
      .default(d.configPollSecs)
      .argParser(seconds('--config-poll-secs', { positive: true })),
    new Option('--header-timeout-secs <seconds>', 'a client must send its request headers within this time')
      .env('GATEWAY_HEADER_TIMEOUT_SECS')
      .default(d.headerTimeoutSecs)
      .argParser(seconds('--header-timeout-secs', { positive: true })),
    new Option(
      '--request-timeout-secs <seconds>',
      'a client must send its whole request within this time (responses are not limited)',
    )
      .env('GATEWAY_REQUEST_TIMEOUT_SECS')
      .default(d.requestTimeoutSecs)
      .argParser(seconds('--request-timeout-secs', { positive: true })),
    new Option(
      '--keep-alive-timeout-secs <seconds>',
      'idle keep-alive client connections are closed after this time; keep it above the idle timeout of load balancers in front',
    )
      .env('GATEWAY_KEEP_ALIVE_TIMEOUT_SECS')
      .default(d.keepAliveTimeoutSecs)
      .argParser(seconds('--keep-alive-timeout-secs', { positive: true })),
    new Option(
      '--shared-state <redis-url>',
      'share rate, concurrency, in-flight, batch and token limits and spend budgets across replicas through Redis (redis:// or rediss://); unset: limits per process',
    ).env('GATEWAY_SHARED_STATE'),
    new Option(
      '--shared-state-failure <policy>',
      'decision while Redis cannot answer: fail_open or fail_closed, for all kinds or per kind (rate, concurrency, inflight, batch, tokens, budget), e.g. "fail_closed,rate=fail_open"',
    )
      .env('GATEWAY_SHARED_STATE_FAILURE')
      .default(d.sharedStateFailure, formatFailurePolicies(d.sharedStateFailure))
      .argParser(failurePolicies),
    new Option(
      '--shared-state-lease-secs <seconds>',
      'lease of a held shared slot, renewed while the request runs; a crashed replica frees its slots after it',
    )
      .env('GATEWAY_SHARED_STATE_LEASE_SECS')
      .default(d.sharedStateLeaseSecs)
      .argParser(seconds('--shared-state-lease-secs', { positive: true })),
    new Option(
      '--shared-state-timeout-ms <ms>',
      'per-call Redis budget; a slower answer is decided by the failure policy',
    )
      .env('GATEWAY_SHARED_STATE_TIMEOUT_MS')
      .default(d.sharedStateTimeoutMs)
      .argParser(integer('--shared-state-timeout-ms', 1, 10_000)),
    new Option('--shared-state-prefix <prefix>', 'prefix of every Redis key (one per deployment)')
      .env('GATEWAY_SHARED_STATE_PREFIX')
      .default(d.sharedStatePrefix)
      .argParser(keyPrefix),
    new Option(
      '--access-log <target>',
      'one JSON line per finished request: stdout, stderr, a file path (appended to), or off',
    )
      .env('GATEWAY_ACCESS_LOG')
      .default(d.accessLog)
      .argParser(accessLogTarget),
  ];
}
