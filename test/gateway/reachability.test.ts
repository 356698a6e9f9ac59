import { describe, expect, it } from 'vitest';
import { gatewaysPerTest } from '../helpers/gateway.js';
import { closedPort, jsonReply, startUpstream } from '../helpers/upstream.js';

/**
 * A provider the gateway cannot reach is named in one warning at start-up and after a reload, from
 * a connection attempt off the request path; readiness never depends on it.
 */

const startGateway = gatewaysPerTest();

/** A loopback port nothing listens on: bound by the OS, then released. */
const UNREACHABLE =
  'provider unreachable: requests routed to it will fail until it answers (readiness does not depend on it)';

describe('providers the gateway cannot reach', () => {
  it('are named once each at start-up and after a reload, and the gateway stays ready', async () => {
    const up = await startUpstream(jsonReply(200, { id: 'ok' }));
    const [down, gone] = [await closedPort(), await closedPort()];
    try {
      const config = (extra: Record<string, unknown> = {}) => ({
        targets: {
          live: { url: up.url },
          dead: { url: `http://127.0.0.1:${down}/v1` },
          pool: {
            providers: [
              { name: 'a', url: `http://127.0.0.1:${down}/v1` },
              { name: 'b', url: up.url },
            ],
          },
          ...extra,
        },
      });
      const gateway = await startGateway(config());
      const first = await gateway.program.waitForLog((l) => l.msg === UNREACHABLE, 5000);
      expect(first).toMatchObject({ level: 'warn', upstream: `http://127.0.0.1:${down}` });
      expect(first.usedBy).toEqual(['dead/http://127.0.0.1:' + down + '/v1', 'pool/a']);
      expect((await fetch(`${gateway.adminUrl}/readyz`)).status).toBe(200);
      // The live provider is never named.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(gateway.program.logs.filter((l) => l.msg === UNREACHABLE)).toHaveLength(1);

      await gateway.writeConfig(config({ later: { url: `http://127.0.0.1:${gone}/v1` } }));
      await gateway.waitForReloads(1);
      await gateway.program.waitForLog(
        (l) => l.msg === UNREACHABLE && l.upstream === `http://127.0.0.1:${gone}`,
        5000,
      );
      expect((await fetch(`${gateway.adminUrl}/readyz`)).status).toBe(200);
    } finally {
      await up.close();
    }
  });
});
