import { describe, expect, it } from 'vitest';
import {
  memberUrl,
  membersFrom,
  serviceReferences,
  type EndpointSliceShape,
} from '../../src/gateway/discovery/members.js';

/** Which of a Service's endpoints are members, from its EndpointSlices as the API server gives them. */

type Endpoint = EndpointSliceShape['endpoints'][number];
const slice = (addressType: string, endpoints: Endpoint[], port = 8000): EndpointSliceShape => ({
  addressType,
  ports: [{ port }],
  endpoints,
});
const pod = (name: string, address: string, conditions: Endpoint['conditions'] = {}): Endpoint => ({
  addresses: [address],
  conditions,
  targetRef: { kind: 'Pod', name },
});
const SERVICE = { port: 8000, max_endpoints: 64 };
const members = (slices: EndpointSliceShape[], service = SERVICE) => membersFrom(slices, service, 'team');

describe('membersFrom', () => {
  it('takes the ready endpoints of every slice of the port, each pod once, sorted by pod name', () => {
    const result = members([
      slice('IPv4', [pod('c', '10.0.0.3'), pod('a', '10.0.0.1')]),
      slice('IPv4', [pod('b', '10.0.0.2'), pod('a', '10.0.0.1')]),
      slice('IPv4', [pod('z', '10.0.0.9')], 9000),
    ]);
    expect(result.ready).toEqual([
      { pod: 'a', address: '10.0.0.1' },
      { pod: 'b', address: '10.0.0.2' },
      { pod: 'c', address: '10.0.0.3' },
    ]);
    expect(result.namespace).toBe('team');
  });

  it('leaves out terminating and not-ready endpoints, and counts them; an absent condition is ready', () => {
    const result = members([
      slice('IPv4', [
        pod('a', '10.0.0.1', { ready: false, terminating: true }),
        pod('b', '10.0.0.2', { ready: false }),
        pod('c', '10.0.0.3', {}),
        { addresses: ['10.0.0.4'] },
      ]),
    ]);
    expect(result.ready.map((m) => m.pod)).toEqual(['10.0.0.4', 'c']);
    expect([result.notReady, result.terminating]).toEqual([1, 1]);
  });

  it('a pod ready in one slice and terminating in another (moving between them) is a member', () => {
    const result = members([
      slice('IPv4', [pod('a', '10.0.0.1', { terminating: true })]),
      slice('IPv4', [pod('a', '10.0.0.1')]),
    ]);
    expect(result.ready.map((m) => m.pod)).toEqual(['a']);
    expect(result.terminating).toBe(0);
  });

  it('reaches a dual-stack pod over IPv4 whatever the order of its slices; an IPv6-only pod over IPv6', () => {
    const v4 = slice('IPv4', [pod('a', '10.0.0.1')]);
    const v6 = slice('IPv6', [pod('a', 'fd00::1'), pod('b', 'fd00::2')]);
    expect(members([v6, v4]).ready).toEqual([
      { pod: 'a', address: '10.0.0.1' },
      { pod: 'b', address: 'fd00::2' },
    ]);
    expect(members([v4, v6]).ready).toEqual(members([v6, v4]).ready);
  });

  it('ignores FQDN slices and names an endpoint without a pod by its hostname, else its address', () => {
    const result = members([
      slice('FQDN', [{ addresses: ['vllm.example.com'] }]),
      slice('IPv4', [
        { addresses: ['10.0.0.7'], hostname: 'vllm-0' },
        { addresses: ['10.0.0.8'], targetRef: { kind: 'Node', name: 'node-1' } },
        { addresses: [] },
      ]),
    ]);
    expect(result.ready.map((m) => m.pod)).toEqual(['10.0.0.8', 'vllm-0']);
  });

  it('takes at most max_endpoints pods, the first by name, and counts the rest', () => {
    const pods = ['e', 'd', 'c', 'b', 'a'].map((name, i) => pod(name, `10.0.0.${i + 1}`));
    const result = members([slice('IPv4', pods)], { port: 8000, max_endpoints: 3 });
    expect(result.ready.map((m) => m.pod)).toEqual(['a', 'b', 'c']);
    expect(result.overLimit).toBe(2);
  });
});

describe('memberUrl and serviceReferences', () => {
  it("puts the entry's scheme, port and path on the address, an IPv6 one in brackets", () => {
    const service = { scheme: 'https' as const, port: 8443, path: '/v1' };
    expect(memberUrl(service, '10.0.0.1')).toBe('https://10.0.0.1:8443/v1');
    expect(memberUrl(service, 'fd00::1')).toBe('https://[fd00::1]:8443/v1');
  });

  it('lists every Service the pools name once', () => {
    const service = (name: string, namespace?: string) => ({
      name,
      namespace,
      port: 8000,
      scheme: 'http' as const,
      path: '',
      max_endpoints: 64,
    });
    const refs = serviceReferences({
      a: { providers: [{ service: service('vllm') }, {}] },
      b: { providers: [{ service: service('vllm') }, { service: service('vllm', 'other') }] },
      c: {},
    });
    expect(refs.map((r) => `${r.namespace ?? ''}/${r.name}`)).toEqual(['/vllm', 'other/vllm']);
  });
});
