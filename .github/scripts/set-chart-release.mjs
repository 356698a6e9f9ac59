// Writes a release into the chart before it is packaged: Chart.yaml version and appVersion, and the
// image repository and digest in values.yaml (comments kept). Used by .github/workflows/release.yaml;
// the files in the repository keep an empty digest, the published chart carries the release's.
//
//   node .github/scripts/set-chart-release.mjs <version> <repository> <sha256:digest>
import { readFileSync, writeFileSync } from 'node:fs';
import { parseDocument } from 'yaml';

const [version, repository, digest] = process.argv.slice(2);
if (!/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(version ?? ''))
  throw new Error(`not a semver version: ${version}`);
if (!repository) throw new Error('missing image repository');
if (!/^sha256:[a-f0-9]{64}$/.test(digest ?? '')) throw new Error(`not an image digest: ${digest}`);

const edit = (file, change) => {
  const doc = parseDocument(readFileSync(file, 'utf8'));
  change(doc);
  writeFileSync(file, doc.toString());
};
edit('charts/gateway/Chart.yaml', (doc) => {
  doc.set('version', version);
  doc.set('appVersion', version);
});
edit('charts/gateway/values.yaml', (doc) => {
  doc.setIn(['image', 'repository'], repository);
  doc.setIn(['image', 'digest'], digest);
});
console.log(`chart ${version}: image ${repository}@${digest}`);
