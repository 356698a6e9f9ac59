/**
 * Keys out of the ConfigMap: the chart moves every literal key of config.spec into its key Secret
 * and leaves { from_file } references in the configuration; the gateway resolves the rendered
 * configuration against the Secret's files as mounted. With keys.moveToSecret off the keys stay
 * literal and the install notes warn.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { ROOT, findObject, render, renderNotes, template, type K8sObject } from './helm.ts';
import { validateObject } from './k8s-validate.ts';

const LITERALS = ['sk-global-1', 'sk-team-a', 'sk-literal-token', 'sk-upstream', 'sk-p1', 'sk-p2'];
const spec = {
  auth: {
    global_keys: ['sk-global-1', { from_env: 'GLOBAL_2' }],
    key_definitions: {
      'team-a': { key: 'sk-team-a', labels: { account: 'a' } },
      'team b/x': { key: { from_file: '/etc/gateway-secrets/team-b' } },
    },
  },
  targets: {
    llama: {
      url: 'http://llama.example/v1',
      gateway_key: 'sk-upstream',
      keys: ['team-a', 'sk-literal-token'],
    },
    pool: {
      strategy: 'priority',
      providers: [
        { name: 'p1', url: 'http://a.example/v1', gateway_key: 'sk-p1' },
        { url: 'http://b.example/v1', gateway_key: 'sk-p2' },
      ],
    },
  },
};

const scratch = mkdtempSync(join(tmpdir(), 'chart-keys-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const configText = (objects: K8sObject[]): string =>
  (findObject(objects, 'ConfigMap', 'gateway')!.data as Record<string, string>)['config.yaml']!;

interface Mount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  subPath?: string;
}
const podSpec = (objects: K8sObject[]) =>
  (
    findObject(objects, 'Deployment')!.spec as {
      template: {
        spec: {
          containers: { name: string; volumeMounts: Mount[] }[];
          volumes: { name: string; secret?: { secretName: string } }[];
        };
      };
    }
  ).template.spec;

describe('keys.moveToSecret (default)', () => {
  const mountPath = join(scratch, 'keys');
  const objects = render({ setJson: { config: { spec }, keys: { mountPath } } });

  it('leaves no key in the ConfigMap, only references to the key Secret', () => {
    const text = configText(objects);
    for (const key of LITERALS) expect(text).not.toContain(key);
    const config = parseYaml(text) as { spec: typeof spec };
    const ref = (prefix: string) => ({
      from_file: expect.stringMatching(new RegExp(`^${mountPath}/${prefix}-[0-9a-f]{8}$`)),
    });
    expect(config.spec.auth.global_keys).toEqual([ref('global-key-0'), { from_env: 'GLOBAL_2' }]);
    expect(config.spec.auth.key_definitions['team-a'].key).toEqual(ref('key-team-a'));
    expect(config.spec.auth.key_definitions['team b/x'].key).toEqual({
      from_file: '/etc/gateway-secrets/team-b',
    });
    expect(config.spec.targets.llama.keys).toEqual(['team-a', ref('client-key-llama-1')]);
    expect(config.spec.targets.pool.providers.map((p) => p.gateway_key)).toEqual([
      ref('gateway-key-pool-p1'),
      ref('gateway-key-pool-1'),
    ]);
  });

  it('puts every literal key in the Secret, mounted as a directory the gateway can watch', () => {
    const secret = findObject(objects, 'Secret', 'gateway-keys')!;
    expect(validateObject(secret)).toEqual([]);
    const data = Object.fromEntries(
      Object.entries(secret.data as Record<string, string>).map(([k, v]) => [
        k,
        Buffer.from(v, 'base64').toString(),
      ]),
    );
    expect(Object.values(data).sort()).toEqual([...LITERALS].sort());
    const pod = podSpec(objects);
    expect(pod.volumes).toContainEqual({ name: 'keys', secret: { secretName: 'gateway-keys' } });
    const mount = pod.containers
      .find((c) => c.name === 'gateway')!
      .volumeMounts.find((m) => m.name === 'keys');
    expect(mount).toEqual({ name: 'keys', mountPath, readOnly: true });
  });

  it('the rendered configuration loads with the Secret files as the kubelet mounts them', () => {
    // The kubelet's layout: the files in a data directory, a symlink per key in the mount path.
    const secret = findObject(objects, 'Secret', 'gateway-keys')!;
    const data = join(scratch, 'keys-data');
    mkdirSync(mountPath, { recursive: true });
    mkdirSync(data, { recursive: true });
    for (const [file, value] of Object.entries(secret.data as Record<string, string>)) {
      writeFileSync(join(data, file), Buffer.from(value, 'base64'));
      symlinkSync(join(data, file), join(mountPath, file));
    }
    // The key referenced outside the chart's Secret, moved next to the others.
    const teamB = join(scratch, 'team-b');
    writeFileSync(teamB, 'sk-team-b\n');
    const config = join(scratch, 'config.yaml');
    writeFileSync(config, configText(objects).replace('/etc/gateway-secrets/team-b', teamB));
    const result = spawnSync(process.execPath, [join(ROOT, 'bin/gateway.js'), 'validate', config], {
      encoding: 'utf8',
      env: { ...process.env, GLOBAL_2: 'sk-global-2' },
    });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('a Secret key name is made safe from any alias', () => {
    const odd = render({
      setJson: {
        config: { spec: { targets: { 'gpt-4o/mini': { url: 'http://x/v1', gateway_key: 'sk-odd' } } } },
      },
    });
    const names = Object.keys(findObject(odd, 'Secret', 'gateway-keys')!.data as Record<string, string>);
    expect(names).toHaveLength(1);
    expect(names[0]).toMatch(/^gateway-key-gpt-4o_mini-[0-9a-f]{8}$/);
  });

  it('two fields whose names read alike get files of their own', () => {
    // Target "a-b" and provider "b" of target "a" read alike; each key must reach its own upstream.
    const objects = render({
      setJson: {
        config: {
          spec: {
            targets: {
              'a-b': { url: 'http://x/v1', gateway_key: 'sk-one' },
              a: {
                strategy: 'priority',
                providers: [{ name: 'b', url: 'http://y/v1', gateway_key: 'sk-two' }],
              },
            },
          },
        },
      },
    });
    const secret = findObject(objects, 'Secret', 'gateway-keys')!.data as Record<string, string>;
    expect(Object.keys(secret)).toHaveLength(2);
    const config = parseYaml(configText(objects)) as {
      spec: {
        targets: {
          'a-b': { gateway_key: { from_file: string } };
          a: { providers: { gateway_key: { from_file: string } }[] };
        };
      };
    };
    const fileOf = (ref: { from_file: string }) => ref.from_file.split('/').at(-1)!;
    const decode = (file: string) => Buffer.from(secret[file]!, 'base64').toString();
    expect(decode(fileOf(config.spec.targets['a-b'].gateway_key))).toBe('sk-one');
    expect(decode(fileOf(config.spec.targets.a.providers[0]!.gateway_key))).toBe('sk-two');
  });

  it('in file mode, no Secret and no mount when the configuration holds no literal key', () => {
    const plain = render({ setJson: { config: { spec: { targets: { m: { url: 'http://x/v1' } } } } } });
    expect(findObject(plain, 'Secret', 'gateway-keys')).toBeUndefined();
    expect(podSpec(plain).volumes.map((v) => v.name)).not.toContain('keys');
  });
});

describe('keys.moveToSecret off', () => {
  it('keeps the literal keys in the ConfigMap and the install notes warn', () => {
    const objects = render({ setJson: { config: { spec }, keys: { moveToSecret: false } } });
    const text = configText(objects);
    for (const key of LITERALS) expect(text).toContain(key);
    expect(findObject(objects, 'Secret', 'gateway-keys')).toBeUndefined();
    const values = join(scratch, 'literal-values.yaml');
    writeFileSync(values, JSON.stringify({ config: { spec }, keys: { moveToSecret: false } }));
    const notes = renderNotes([values]);
    expect(notes).toMatch(
      /WARNING: 6 literal key\(s\) of config\.spec .* are written into\s+the ConfigMap gateway, readable by anyone allowed to read ConfigMaps/,
    );
  });

  it('in resource mode, the notes warn that the keys are in the GatewayConfig object', () => {
    const values = join(scratch, 'literal-resource-values.yaml');
    writeFileSync(
      values,
      JSON.stringify({ config: { source: 'resource', spec }, keys: { moveToSecret: false } }),
    );
    expect(renderNotes([values])).toMatch(
      /are written into\s+the GatewayConfig gateway, readable by anyone allowed to read GatewayConfigs/,
    );
  });
});

describe('keys.existingSecret', () => {
  it('mounts a Secret the user manages as a directory', () => {
    const objects = render({
      setJson: {
        config: { spec: { targets: { m: { url: 'http://x/v1' } } } },
        keys: { existingSecret: 'team-keys' },
      },
    });
    const pod = podSpec(objects);
    expect(pod.volumes).toContainEqual({ name: 'existing-keys', secret: { secretName: 'team-keys' } });
    const mount = pod.containers
      .find((c) => c.name === 'gateway')!
      .volumeMounts.find((m) => m.name === 'existing-keys');
    expect(mount).toEqual({ name: 'existing-keys', mountPath: '/etc/gateway-secrets', readOnly: true });
  });

  it('refuses a mount path shared with another volume', () => {
    const result = template({
      setJson: {
        config: { spec: { targets: { m: { url: 'http://x/v1' } } } },
        keys: { existingSecret: 'team-keys', existingSecretMountPath: '/etc/gateway-keys' },
      },
    });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('must be different directories');
  });
});
