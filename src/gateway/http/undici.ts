import { createRequire } from 'node:module';
import type * as Undici from 'undici';

/**
 * The two parts of `undici` the gateway uses at run time, its `Agent` and its error classes, loaded
 * from their own modules. The package's index also loads fetch, WebSocket, EventSource, the cache
 * and mock layers and the proxy agents: about 100 modules and 13 MB of RSS in every gateway process
 * for code it never calls. The classes are the very ones the index exports (the index requires these
 * same files), so `instanceof` checks agree whichever way a module imported them. Types still come
 * from `'undici'`. The version is pinned in package.json, and test/telemetry/lazy-modules.test.ts
 * starts a gateway, so a release that moves these files fails there.
 */
const load = createRequire(import.meta.url);

export const Agent = load('undici/lib/dispatcher/agent.js') as typeof Undici.Agent;
export type Agent = Undici.Agent;
export const errors = load('undici/lib/core/errors.js') as typeof Undici.errors;
