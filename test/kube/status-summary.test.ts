import { describe, expect, it } from 'vitest';
import type { GatewayConfigObject, ReplicaEntry } from '../../src/gateway/kube/resource.js';
import { statusMatches, summarize } from '../../src/gateway/kube/status-summary.js';

const NOW = Date.parse('2026-11-27T12:00:00Z');
const STALE_MS = 45_000;
const at = (secondsAgo: number): string => new Date(NOW - secondsAgo * 1000).toISOString();

function object(generation: number, replicas: ReplicaEntry[], status: GatewayConfigObject['status'] = {}) {
  return {
    metadata: { name: 'main', namespace: 'team', uid: 'u', generation, resourceVersion: '1' },
    status: { ...status, replicas },
  } satisfies GatewayConfigObject;
}

describe('the object-wide status', () => {
  it('every live replica serving the generation: Accepted and Ready, n/m', () => {
    const summary = summarize(
      object(3, [
        { pod: 'a', observedGeneration: 3, accepted: true, servedGeneration: 3, heartbeatTime: at(5) },
        { pod: 'b', observedGeneration: 3, accepted: true, servedGeneration: 3, heartbeatTime: at(10) },
      ]),
      NOW,
      STALE_MS,
    );
    expect(summary.observedGeneration).toBe(3);
    expect(summary.serving).toBe('2/2');
    expect(summary.conditions).toEqual([
      expect.objectContaining({
        type: 'Accepted',
        status: 'True',
        reason: 'Accepted',
        observedGeneration: 3,
      }),
      expect.objectContaining({
        type: 'Ready',
        status: 'True',
        reason: 'AllReplicasServing',
        message: '2 of 2 replicas serve generation 3',
      }),
    ]);
    expect(summary.stale).toEqual([]);
  });

  it('a refusal names the replica and its message; the replicas still serve the older generation', () => {
    const summary = summarize(
      object(4, [
        {
          pod: 'a',
          observedGeneration: 4,
          accepted: false,
          message: 'spec.targets.x.url: must not carry a query string',
          servedGeneration: 3,
          heartbeatTime: at(1),
        },
        { pod: 'b', observedGeneration: 3, accepted: true, servedGeneration: 3, heartbeatTime: at(2) },
      ]),
      NOW,
      STALE_MS,
    );
    const accepted = summary.conditions.find((c) => c.type === 'Accepted')!;
    expect(accepted).toMatchObject({ status: 'False', reason: 'Invalid' });
    expect(accepted.message).toBe(
      'generation 4 refused by replica a: spec.targets.x.url: must not carry a query string',
    );
    expect(summary.serving).toBe('0/2');
    expect(summary.conditions.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'ReplicasNotServing',
    });
  });

  it('an entry whose heartbeat is older than the limit stops counting and is listed for removal', () => {
    const gone: ReplicaEntry = {
      pod: 'gone',
      observedGeneration: 2,
      accepted: true,
      servedGeneration: 2,
      heartbeatTime: at(46),
    };
    const summary = summarize(
      object(2, [
        gone,
        { pod: 'a', observedGeneration: 2, accepted: true, servedGeneration: 2, heartbeatTime: at(3) },
      ]),
      NOW,
      STALE_MS,
    );
    expect(summary.serving).toBe('1/1');
    expect(summary.stale).toEqual([gone]);
    // Judged with no limit (right after an outage of the API server), every entry counts.
    expect(summarize(object(2, [gone]), NOW, Number.POSITIVE_INFINITY).serving).toBe('1/1');
  });

  it('nobody has checked the generation yet: Accepted Unknown, observedGeneration kept', () => {
    const summary = summarize(
      object(
        5,
        [{ pod: 'a', observedGeneration: 4, accepted: true, servedGeneration: 4, heartbeatTime: at(1) }],
        {
          observedGeneration: 4,
        },
      ),
      NOW,
      STALE_MS,
    );
    expect(summary.observedGeneration).toBe(4);
    expect(summary.conditions[0]).toMatchObject({ type: 'Accepted', status: 'Unknown', reason: 'Pending' });
  });

  it('keeps a condition transition time while its status holds, and matches a status that says the same', () => {
    const entries: ReplicaEntry[] = [
      { pod: 'a', observedGeneration: 1, accepted: true, servedGeneration: 1, heartbeatTime: at(1) },
    ];
    const first = summarize(object(1, entries), NOW - 60_000, STALE_MS + 60_000);
    const written = object(1, entries, {
      observedGeneration: first.observedGeneration,
      serving: first.serving,
      conditions: first.conditions,
    });
    const later = summarize(written, NOW, STALE_MS);
    expect(later.conditions.map((c) => c.lastTransitionTime)).toEqual(
      first.conditions.map((c) => c.lastTransitionTime),
    );
    expect(statusMatches(written, later)).toBe(true);
    expect(statusMatches(object(1, entries), later)).toBe(false);
  });
});
