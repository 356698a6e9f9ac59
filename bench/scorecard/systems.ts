/**
 * The systems the scorecard compares, each configured for failover the way its own documentation
 * recommends: the provider itself (no gateway: what the client sees without one), this gateway in
 * its default mode and in strict mode, and Portkey's open-source gateway.
 */
import { SHIPPED_NODE_ARGS, startGateway, type RunningGateway } from '../support/services.ts';
import { ensurePortkey, startPortkey, type RunningPortkey } from '../support/portkey.ts';
import type { Target } from './observe.ts';
import type { MessagesTarget } from './observe-messages.ts';
import {
  MESSAGES_READERS,
  MESSAGES_ROUTES,
  MESSAGES_SCENARIOS,
  type MessagesReader,
  type MessagesRoute,
  type MessagesScenario,
} from './messages-scenarios.ts';
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
  /** Where a Messages row's requests go on `route`, or why the system cannot take them there. */
  messages(
    scenario: MessagesScenario,
    route: MessagesRoute,
    reader: MessagesReader,
  ): MessagesTarget | { readonly reason: string };
  stop(): Promise<void>;
}

/** The API a route's providers speak (`api` of this gateway's provider entries). */
const API_OF: Record<MessagesRoute, 'anthropic' | 'openai'> = {
  'passed-through': 'anthropic',
  translated: 'openai',
};

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

/**
 * This gateway's pool for one preferred provider: priority order, failover, ejection. `api: anthropic`
 * providers are sent Messages requests unchanged; without `api` they speak chat completions.
 */
function gatewayPool(preferred: Provider, world: World, api?: 'anthropic'): Record<string, unknown> {
  const second = backup(world);
  const speaks = api === undefined ? {} : { api };
  return {
    strategy: 'priority',
    providers: [
      { name: 'preferred', url: preferred.baseUrl, gateway_model: preferred.model, ...speaks },
      { name: 'backup', url: second.baseUrl, gateway_model: second.model, ...speaks },
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

/** Alias of a Messages row for one route and reader: each has its own pool state too. */
export function messagesAliasOf(
  scenario: MessagesScenario,
  route: MessagesRoute,
  reader: MessagesReader,
): string {
  return `${scenario.id.toLowerCase()}-${route}-${reader}`;
}

export function gatewayConfig(world: World, strict: boolean): Record<string, unknown> {
  const targets: Record<string, unknown> = {};
  for (const client of ['raw', 'sdk'] as const) {
    for (const scenario of FAULT_SCENARIOS)
      targets[aliasOf(scenario, client)] = gatewayPool(scenario.preferred(world), world);
    for (const name of ['capacity', 'long'] as const)
      targets[aliasOf(name, client)] = gatewayPool(poolProvider(world, name), world);
  }
  for (const scenario of MESSAGES_SCENARIOS)
    for (const route of MESSAGES_ROUTES)
      for (const reader of MESSAGES_READERS) {
        const preferred = { baseUrl: `${world.sim.origin}/v1`, model: scenario.model };
        const api = API_OF[route] === 'anthropic' ? 'anthropic' : undefined;
        targets[messagesAliasOf(scenario, route, reader)] = gatewayPool(preferred, world, api);
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

/**
 * Portkey's fallback config for one Messages row on `route`: the `anthropic` provider (which Portkey
 * sends the Messages API unchanged) or the `openai` one (chat completions), with a custom host.
 */
export function portkeyMessagesConfig(
  model: string,
  route: MessagesRoute,
  world: World,
): Record<string, unknown> {
  const target = (name: string) => ({
    provider: API_OF[route],
    api_key: 'scorecard',
    custom_host: `${world.sim.origin}/v1`,
    override_params: { model: name },
  });
  return {
    strategy: { mode: 'fallback' },
    request_timeout: TIMEOUTS.headers_ms,
    targets: [target(model), target(backup(world).model)],
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
    messages: (scenario, route) =>
      route === 'passed-through'
        ? { origin: world.sim.origin, model: scenario.model, headers: {} }
        : { reason: 'not applicable: a provider that speaks only chat completions has no Messages API' },
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
    messages: (scenario, route, reader) => ({
      origin: gateway.origin,
      model: messagesAliasOf(scenario, route, reader),
      headers: {},
    }),
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
  const toMessages = (model: string, route: MessagesRoute): MessagesTarget => ({
    origin: portkey.origin,
    model,
    headers: { 'x-portkey-config': JSON.stringify(portkeyMessagesConfig(model, route, world)) },
  });
  const refused: Partial<Record<MessagesRoute, string>> = {};
  for (const route of MESSAGES_ROUTES) {
    const refusal = await messagesRefusal(toMessages(backup(world).model, route));
    if (refusal !== undefined) refused[route] = `not supported: ${refusal}`;
  }
  return {
    id: 'portkey',
    label: `Portkey gateway ${install.version}`,
    portkey,
    target: (scenario) => to(scenario.preferred(world)),
    pool: (name) => to(poolProvider(world, name)),
    messages: (scenario, route) => {
      const reason = refused[route];
      return reason === undefined ? toMessages(scenario.model, route) : { reason };
    },
    stop: () => portkey.stop(),
  };
}

/**
 * Whether a system takes a Messages request for the healthy model on a route: undefined when it
 * answers 200, else what it answered (`500 "messages is not supported by openai"`), as observed.
 */
async function messagesRefusal(target: MessagesTarget): Promise<string | undefined> {
  const response = await fetch(`${target.origin}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': 'scorecard',
      'anthropic-version': '2023-06-01',
      ...target.headers,
    },
    body: JSON.stringify({
      model: target.model,
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Say something.' }],
    }),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  if (response.status === 200) return undefined;
  let said = text.slice(0, 120);
  try {
    const body = JSON.parse(text) as { message?: unknown; error?: { message?: unknown } };
    said = String(body.message ?? body.error?.message ?? said);
  } catch {
    // not JSON: its first characters
  }
  return `it answers ${response.status} "${said}"`;
}
