import { createRequire } from 'node:module';
import type * as NodeHttp from 'node:http';

/**
 * `node:http`'s `createServer`, loaded with `require`. An ES `import` of `node:http` builds the
 * module's namespace from every export, and reading `http.WebSocket` (and the other lazy web
 * exports) loads Node's bundled copy of undici, about 760 KB of source and 13 MB of RSS the
 * gateway never uses (it talks to providers through the `undici` package). `require` returns the
 * module object without touching those getters. test/telemetry/lazy-modules.test.ts fails when a
 * started gateway has loaded `internal/deps/undici`.
 */
const http = createRequire(import.meta.url)('node:http') as typeof NodeHttp;

export const createServer: typeof NodeHttp.createServer = http.createServer;
