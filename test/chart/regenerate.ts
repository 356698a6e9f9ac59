/**
 * `make chart-golden`: rewrites charts/gateway/values.schema.json, the CustomResourceDefinition in
 * charts/gateway/crds/ (`gateway crd`), the golden renders in
 * charts/gateway/tests/golden/ and the plain manifests in manifests/rendered/. The schema comes
 * first: helm validates every render against it.
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import {
  CRD_FILE,
  SCHEMA_FILE,
  expectedCrdText,
  expectedSchemaText,
  goldenFile,
  goldenText,
  manifestFile,
  manifestText,
} from './generate.ts';
import { GOLDEN_DIR, MANIFEST_RENDERED_DIR, ROOT, ciCases, manifestCases } from './helm.ts';

const written: string[] = [];
const write = (file: string, text: string): void => {
  writeFileSync(file, text);
  written.push(relative(ROOT, file));
};

write(SCHEMA_FILE, await expectedSchemaText());
write(CRD_FILE, expectedCrdText());

// Start from empty directories so a removed scenario leaves no orphan behind.
for (const dir of [GOLDEN_DIR, MANIFEST_RENDERED_DIR]) {
  mkdirSync(dir, { recursive: true });
  for (const file of readdirSync(dir)) if (file.endsWith('.yaml')) rmSync(`${dir}/${file}`);
}
for (const { name, file } of ciCases()) write(goldenFile(name), goldenText(file));
for (const { name, file } of manifestCases()) write(manifestFile(name), manifestText(name, file));

console.log(`chart-golden: wrote ${written.length} files\n  ${written.join('\n  ')}`);
