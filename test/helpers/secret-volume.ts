import { mkdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface SecretVolume {
  /** The mount directory; key `k` is at `<root>/k`. */
  root: string;
  path: (key: string) => string;
  /**
   * An update as the kubelet's atomic writer makes it: a new timestamped directory with every key,
   * `..data_tmp -> <new>` renamed over `..data`, the old directory removed. Keys not given are
   * absent from the new generation (their `<key> -> ..data/<key>` links then dangle).
   */
  update: (values: Record<string, string>) => Promise<void>;
}

/**
 * A Kubernetes Secret (or ConfigMap) volume laid out like the kubelet does: `<key> -> ..data/<key>`,
 * `..data -> ..<timestamp>`, the files in the timestamped directory.
 */
export async function secretVolume(root: string, values: Record<string, string>): Promise<SecretVolume> {
  let generation = 0;
  const writeGeneration = async (keys: Record<string, string>): Promise<string> => {
    generation++;
    const name = `..2026_01_01_00_00_${String(generation).padStart(2, '0')}.${String(generation).padStart(9, '0')}`;
    await mkdir(join(root, name));
    for (const [key, value] of Object.entries(keys)) await writeFile(join(root, name, key), value);
    return name;
  };
  await mkdir(root, { recursive: true });
  let current = await writeGeneration(values);
  await symlink(current, join(root, '..data'));
  const linked = new Set<string>();
  const link = async (key: string): Promise<void> => {
    if (linked.has(key)) return;
    linked.add(key);
    await symlink(`..data/${key}`, join(root, key));
  };
  for (const key of Object.keys(values)) await link(key);
  return {
    root,
    path: (key) => join(root, key),
    async update(keys) {
      const previous = current;
      current = await writeGeneration(keys);
      await symlink(current, join(root, '..data_tmp'));
      await rename(join(root, '..data_tmp'), join(root, '..data'));
      for (const key of Object.keys(keys)) await link(key);
      await rm(join(root, previous), { recursive: true });
    },
  };
}
