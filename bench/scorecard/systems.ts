/**
 * The systems the scorecard compares, each configured for failover the way its own documentation
 * recommends: the provider itself (no gateway: what the client sees without one), this gateway in
 * its default mode and in strict mode, and Portkey's open-source gateway.
 */
import { SHIPPED_NODE_ARGS, startGateway, type RunningGateway } from '../support/services.ts';
import { ensurePortkey, startPortkey, type RunningPortkey } from '../support/portkey.ts';
import type { Target } from './observe.ts';
import { backup, FAULT_SCENARIOS, type FaultScenario, type Provider, type World } from './scenarios.ts';

export type SystemId = 'direct' | 'gateway' | 'gateway-strict' | 'portkey';
export type ClientKind = 'raw' | 'sdk';

export interface System {
  readonly id: SystemId;
  readonly label: string;
  /** Where a client sends a fault row's requests. */
  target(scenario: FaultScenario, client: ClientKind): Target;
  /** Where a client sends requests that should reach `provider` (with the backup behind it). */
  pool(name: PoolName, client: ClientKind): Target;
  stop(): Promise<void>;
}

/** The pools of the rows that are not one fault: a capacity drop, reloads, drains, cancellation. */
export type PoolName = 'capacity' | 'long';

/** The preferred provider of each named pool. */
export function poolProvider(world: World, name: PoolName): Provider {
  return { baseUrl: `${world.sim.origin}/v1`, model: name === 'capacity' ? 'preferred' : 'long-stream' };
}

/**
 * Timeouts scaled to the simulator, whose answers take about 100 ms: a production configuration
 * scales them to its longest generation (a non-streamed answer's headers come only when it is done).
 */
export const TIMEOUTS = { connect_ms: 1000, headers_ms: 2000, idle_ms: 3000 };
export const FIRST_TOKEN_TIMEOUT_MS = 1000;

/** This gateway's pool for one preferred provider: priority order, failover, ejection. */
function gatewayPool(preferred: Provider, world: World): Record<string, unknown> {
  const second = backup(world);
  return {
    strategy: 'priority',
    providers: [
      { name: 'preferred', url: preferred.baseUrl, gateway_model: preferred.model },
      { name: 'backup', url: second.baseUrl, gateway_model: second.model },
    ],
    fallback: {
      on_status: [429, 5],
      on_rate_limit: true,
      on_connection_error: true,
      max_attempts: 2,
      first_token_timeout_ms: FIRST_TOKEN_TIMEOUT_MS,
      aimd: { latency_budget_ms: 500 },
    },
    outlier_detection: {},
  };
}

/** Alias of a fault row for one client kind: each has its own pool state (ejection, AIMD). */
export function aliasOf(scenario: FaultScenario | PoolName, client: ClientKind): string {
  return typeof scenario === 'string' ? `${scenario}-${client}` : `s${scenario.id}-${client}`;
}

export function gatewayConfig(world: World, strict: boolean): Record<string, unknown> {
  const targets: Record<string, unknown> = {};
  for (const client of ['raw', 'sdk'] as const) {
    for (const scenario of FAULT_SCENARIOS)
      targets[aliasOf(scenario, client)] = gatewayPool(scenario.preferred(world), world);
    for (const name of ['capacity', 'long'] as const)
      targets[aliasOf(name, client)] = gatewayPool(poolProvider(world, name), world);
  }
  return { strict_mode: strict, timeouts: TIMEOUTS, targets };
}

/** Portkey's fallback config for one preferred provider, sent with each request (`x-portkey-config`). */
export function portkeyConfig(preferred: Provider, world: World): Record<string, unknown> {
  const second = backup(world);
  const target = (provider: Provider) => ({
    provider: 'openai',
    api_key: 'scorecard',
    custom_host: provider.baseUrl,
    override_params: { model: provider.model },
  });
  return {
    strategy: { mode: 'fallback' },
    request_timeout: TIMEOUTS.headers_ms,
    targets: [target(preferred), target(second)],
  };
}

export function directSystem(world: World): System {
  const to = (provider: Provider): Target => ({
    baseUrl: provider.baseUrl,
    model: provider.model,
    headers: {},
  });
  return {
    id: 'direct',
    label: 'Provider directly (no gateway)',
    target: (scenario) => to(scenario.preferred(world)),
    pool: (name) => to(poolProvider(world, name)),
    stop: async () => {},
  };
}

export interface GatewaySystem extends System {
  readonly gateway: RunningGateway;
  readonly config: Record<string, unknown>;
}

/** @param args extra gateway flags (the drain row's shutdown delay). */
export async function gatewaySystem(
  world: World,
  strict: boolean,
  args: string[] = [],
): Promise<GatewaySystem> {
  const config = gatewayConfig(world, strict);
  const gateway = await startGateway(strict ? 'gateway-strict' : 'gateway', config, {
    env: { GATEWAY_ACCESS_LOG: 'off' },
    args,
  });
  const to = (alias: string): Target => ({ baseUrl: `${gateway.origin}/v1`, model: alias, headers: {} });
  return {
    id: strict ? 'gateway-strict' : 'gateway',
    label: strict ? 'This gateway, strict mode' : 'This gateway',
    gateway,
    config,
    target: (scenario, client) => to(aliasOf(scenario, client)),
    pool: (name, client) => to(aliasOf(name, client)),
    stop: () => gateway.stop(),
  };
}

export interface PortkeySystem extends System {
  readonly portkey: RunningPortkey;
}

/** Portkey, or why it could not run (it is installed from the npm registry on first use). */
export async function portkeySystem(
  world: World,
  log: (line: string) => void,
): Promise<PortkeySystem | { reason: string }> {
  const install = await ensurePortkey(log);
  if ('reason' in install) return { reason: install.reason };
  const portkey = await startPortkey(install, 0, SHIPPED_NODE_ARGS);
  const to = (provider: Provider): Target => ({
    baseUrl: `${portkey.origin}/v1`,
    model: provider.model,
    headers: { 'x-portkey-config': JSON.stringify(portkeyConfig(provider, world)) },
  });
  return {
    id: 'portkey',
    label: `Portkey gateway ${install.version}`,
    portkey,
    target: (scenario) => to(scenario.preferred(world)),
    pool: (name) => to(poolProvider(world, name)),
    stop: () => portkey.stop(),
  };
}
