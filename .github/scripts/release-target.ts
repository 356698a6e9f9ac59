/**
 * Where a release goes, from the chart's own default: image.repository in
 * charts/gateway/values.yaml is the one source of truth. The release workflow pushes the image
 * there and the chart next to it (<registry>/<owner>/charts), and the published chart keeps it as
 * its default, so `helm install` pulls from where the release pushed.
 *
 *   node .github/scripts/release-target.ts <github-owner>
 *
 * prints `image=<repository>` and `charts=oci://<registry>/<owner>/charts` (lines for
 * $GITHUB_OUTPUT) and fails before anything is built when the workflow's token could not push
 * there: the repository must be ghcr.io/<owner>/<name>, owner in lower case.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { CHART } from '../../test/chart/helm.ts';

const [owner, ...extra] = process.argv.slice(2);
if (!owner || extra.length > 0) {
  console.error('usage: node .github/scripts/release-target.ts <github-owner>');
  process.exit(2);
}

const values = parseYaml(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as {
  image?: { repository?: unknown };
};
const repository = values.image?.repository;
const namespace = `ghcr.io/${owner.toLowerCase()}`;
const match = typeof repository === 'string' ? /^(ghcr\.io\/[^/]+)\/([a-z0-9._-]+)$/.exec(repository) : null;
if (!match || match[1] !== namespace) {
  console.error(
    `release-target: image.repository in charts/gateway/values.yaml is ${JSON.stringify(repository)}, ` +
      `but this workflow can push only to ${namespace}/<name> (GITHUB_TOKEN of ${owner}). ` +
      `Set image.repository to ${namespace}/gateway (the published chart installs from it) and tag again.`,
  );
  process.exit(1);
}
console.log(`image=${repository}`);
console.log(`charts=oci://${namespace}/charts`);
