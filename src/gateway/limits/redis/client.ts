import { Redis, type Result } from 'ioredis';
import type { Logger } from '../../telemetry/logger.js';
import { ADMIT, CHARGE_TOKENS, RELEASE_SLOTS, RENEW_SLOTS } from './scripts.js';
import { READ_SPEND, RENEW_SPEND, RESERVE_SPEND, SETTLE_SPEND } from './spend-scripts.js';
import { redactedTarget } from './url.js';

// The scripts as ioredis commands: EVALSHA, with EVAL on the first use per connection and on NOSCRIPT
// (a restarted Redis has forgotten them), so every call sends a 40-byte hash instead of the source.
declare module 'ioredis' {
  interface RedisCommander<Context> {
    gatewayAdmit(
      keyCount: number,
      ...keysThenArgs: (string | number)[]
    ): Result<[granted: number, waitSeconds: number, ...levels: string[]], Context>;
    gatewayChargeTokens(keyCount: number, ...keysThenArgs: (string | number)[]): Result<number, Context>;
    gatewayRenewSlots(key: string, leaseMs: number, ...leaseIds: string[]): Result<number, Context>;
    gatewayReleaseSlots(keyCount: number, ...keysThenLeaseIds: string[]): Result<number, Context>;
    gatewayReserveSpend(keyCount: number, ...keysThenArgs: (string | number)[]): Result<string[], Context>;
    gatewaySettleSpend(keyCount: number, ...keysThenArgs: (string | number)[]): Result<number, Context>;
    gatewayReadSpend(keyCount: number, ...keysThenArgs: (string | number)[]): Result<string[], Context>;
    gatewayRenewSpend(
      expiryKey: string,
      amountsKey: string,
      stateKey: string,
      leaseMs: number,
      ...ids: string[]
    ): Result<number, Context>;
  }
}

/** Why Redis gave no answer: the failure policy decides instead, and the reason is logged. */
export type UnavailableReason = 'disconnected' | 'timeout' | 'error';

export interface Unavailable {
  readonly ok: false;
  readonly reason: UnavailableReason;
}

/**
 * How many admission steps Redis granted (and, when a token budget refused, the seconds until it is
 * positive again, and the level of each bucket and budget step), or why it gave no answer. Errors
 * are values.
 */
export type Verdict =
  | {
      readonly ok: true;
      readonly granted: number;
      readonly waitSeconds: number;
      /** The admission reply itself: the levels are its entries from index 2 on, as strings. */
      readonly reply: readonly (number | string)[];
    }
  | Unavailable;

/** A spend script's reply: its entries as strings (Redis would truncate Lua numbers to integers). */
export interface SpendReply {
  readonly ok: true;
  readonly reply: readonly (string | number)[];
}

const UNAVAILABLE: Readonly<Record<UnavailableReason, Unavailable>> = Object.freeze({
  disconnected: Object.freeze({ ok: false, reason: 'disconnected' }),
  timeout: Object.freeze({ ok: false, reason: 'timeout' }),
  error: Object.freeze({ ok: false, reason: 'error' }),
});

export interface SharedStateClientOptions {
  /** `redis://[user:password@]host:port[/db]` or `rediss://` for TLS. */
  readonly url: string;
  /** Per-call budget; a slower answer counts as unavailable. */
  readonly timeoutMs: number;
  readonly logger: Logger;
  /** Called on every change of connection health (for the `up` gauge). */
  readonly onHealth?: (up: boolean) => void;
}

/** Reconnect backoff: quick at first so a restarted Redis is back within a second, capped at 1 s. */
function retryDelay(attempt: number): number {
  return Math.min(attempt * 100, 1000);
}

/**
 * The Redis connection of the shared limiters, with its health. One connection per gateway: every
 * script is a few microseconds of server time, and ioredis pipelines concurrent calls on it.
 *
 * Failing fast is the point. The offline queue is off and nothing is retried on reconnect, so a call
 * while Redis is down answers `disconnected` at once instead of queueing behind the reconnect, and a
 * call slower than the timeout answers `timeout`; in both cases the caller applies its failure
 * policy within the budget. Reconnection runs in the background for as long as the process lives,
 * and decisions return to Redis as soon as the connection is ready again.
 */
export class SharedStateClient {
  readonly #redis: Redis;
  readonly #logger: Logger;
  readonly #onHealth: ((up: boolean) => void) | undefined;
  readonly #target: string;
  #up = false;
  #closing = false;
  #lastError: string | undefined;

  constructor(options: SharedStateClientOptions) {
    this.#logger = options.logger;
    this.#onHealth = options.onHealth;
    this.#target = redactedTarget(options.url);
    this.#redis = new Redis(options.url, {
      commandTimeout: options.timeoutMs,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      connectTimeout: 2000,
      retryStrategy: retryDelay,
      connectionName: 'gateway-limits',
    });
    // The admission script takes a variable number of keys, passed first with each call.
    this.#redis.defineCommand('gatewayAdmit', { lua: ADMIT });
    this.#redis.defineCommand('gatewayRenewSlots', { numberOfKeys: 1, lua: RENEW_SLOTS });
    this.#redis.defineCommand('gatewayReleaseSlots', { lua: RELEASE_SLOTS });
    this.#redis.defineCommand('gatewayChargeTokens', { lua: CHARGE_TOKENS });
    this.#redis.defineCommand('gatewayReserveSpend', { lua: RESERVE_SPEND });
    this.#redis.defineCommand('gatewaySettleSpend', { lua: SETTLE_SPEND });
    this.#redis.defineCommand('gatewayReadSpend', { lua: READ_SPEND });
    this.#redis.defineCommand('gatewayRenewSpend', { numberOfKeys: 3, lua: RENEW_SPEND });
    this.#redis.on('ready', () => this.#setUp(true));
    this.#redis.on('close', () => this.#setUp(false));
    // Every failed reconnect emits an error; the health transition is what gets logged at warn.
    this.#redis.on('error', (error: Error) => {
      this.#lastError = error.message;
      this.#logger.debug({ sharedState: this.#target, err: error.message }, 'shared state connection error');
    });
  }

  /** Redis host, port and database, without credentials: what logs may name. */
  get target(): string {
    return this.#target;
  }

  get up(): boolean {
    return this.#up;
  }

  /** Resolves true once connected, or false after `waitMs` (the gateway then starts degraded). */
  async waitUntilReady(waitMs: number): Promise<boolean> {
    if (this.#up) return true;
    return new Promise((resolve) => {
      const onReady = (): void => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.#redis.off('ready', onReady);
        resolve(false);
      }, waitMs);
      this.#redis.once('ready', onReady);
    });
  }

  /**
   * Runs the admission script (see scripts.ts): `keys` one per step, `args` the lease ms and then
   * four values per step. Answers synchronously when the connection is down, so a degraded decision
   * costs no round trip and no microtask.
   */
  admit(keys: readonly string[], args: readonly (string | number)[]): Promise<Verdict> | Unavailable {
    if (!this.#up) return UNAVAILABLE.disconnected;
    return this.#redis.gatewayAdmit(keys.length, ...keys, ...args).then(granted, unavailable);
  }

  /**
   * Removes `leaseIds[i]` from `keys[i]`, fire and forget: a release that cannot reach Redis is
   * covered by the lease expiry.
   */
  releaseSlots(keys: readonly string[], leaseIds: readonly string[]): void {
    if (!this.#up || keys.length === 0) return;
    this.#redis.gatewayReleaseSlots(keys.length, ...keys, ...leaseIds).catch(ignore);
  }

  /**
   * Charges token budgets (`args`: capacity, refill per second and tokens per key), fire and forget:
   * false when Redis is not connected or the call failed, so the caller can count what was lost.
   */
  async chargeTokens(keys: readonly string[], args: readonly (string | number)[]): Promise<boolean> {
    if (!this.#up || keys.length === 0) return false;
    return this.#redis.gatewayChargeTokens(keys.length, ...keys, ...args).then(
      () => true,
      () => false,
    );
  }

  /** Extends the leases this process holds on `key`; false when Redis could not be reached. */
  async renewSlots(key: string, leaseMs: number, leaseIds: readonly string[]): Promise<boolean> {
    if (!this.#up || leaseIds.length === 0) return false;
    return this.#redis.gatewayRenewSlots(key, leaseMs, ...leaseIds).then(
      () => true,
      () => false,
    );
  }

  /**
   * Reserves in spend budgets (see spend-scripts.ts): the reply, or why there is none. Answers
   * synchronously when the connection is down.
   */
  reserveSpend(
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<SpendReply | Unavailable> | Unavailable {
    if (!this.#up) return UNAVAILABLE.disconnected;
    return this.#redis.gatewayReserveSpend(keys.length, ...keys, ...args).then(spendReply, unavailable);
  }

  /** Settles a reservation: true once Redis took it, else why it did not. */
  async settleSpend(
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<true | Unavailable> {
    if (!this.#up) return UNAVAILABLE.disconnected;
    return this.#redis
      .gatewaySettleSpend(keys.length, ...keys, ...args)
      .then(() => true as const, unavailable);
  }

  /** Spent and reserved per budget, or why there is no answer. */
  async readSpend(
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<SpendReply | Unavailable> {
    if (!this.#up) return UNAVAILABLE.disconnected;
    return this.#redis.gatewayReadSpend(keys.length, ...keys, ...args).then(spendReply, unavailable);
  }

  /** Extends the leases of this process's reservations in one budget; false when Redis could not be reached. */
  async renewSpend(
    keys: readonly [expiry: string, amounts: string, state: string],
    leaseMs: number,
    ids: readonly string[],
  ): Promise<boolean> {
    if (!this.#up || ids.length === 0) return false;
    return this.#redis.gatewayRenewSpend(keys[0], keys[1], keys[2], leaseMs, ...ids).then(
      () => true,
      () => false,
    );
  }

  /** Closes the connection and stops reconnecting; waits at most `waitMs` for a polite QUIT. */
  async close(waitMs = 1000): Promise<void> {
    this.#closing = true;
    if (this.#redis.status === 'ready') {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this.#redis.quit().catch(ignore),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs))),
      ]);
      clearTimeout(timer);
    }
    this.#redis.disconnect(false);
    this.#setUp(false);
  }

  #setUp(up: boolean): void {
    if (up === this.#up) return;
    this.#up = up;
    this.#onHealth?.(up);
    if (up) {
      this.#lastError = undefined;
      this.#logger.info({ sharedState: this.#target }, 'shared state connected; limits are decided by Redis');
    } else if (this.#closing) {
      this.#logger.info({ sharedState: this.#target }, 'shared state connection closed');
    } else {
      this.#logger.warn(
        { sharedState: this.#target, err: this.#lastError ?? 'connection closed' },
        'shared state unreachable; limits are decided by the failure policy until it returns',
      );
    }
  }
}

function granted(reply: [granted: number, waitSeconds: number, ...levels: string[]]): Verdict {
  return { ok: true, granted: reply[0], waitSeconds: reply[1], reply };
}

function spendReply(reply: string[]): SpendReply {
  return { ok: true, reply };
}

function unavailable(error: unknown): Unavailable {
  const message = error instanceof Error ? error.message : '';
  if (message.includes('timed out')) return UNAVAILABLE.timeout;
  if (message.includes('Connection is closed') || message.includes("isn't writeable")) {
    return UNAVAILABLE.disconnected;
  }
  return UNAVAILABLE.error;
}

function ignore(): void {}
