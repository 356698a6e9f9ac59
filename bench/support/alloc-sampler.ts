/**
 * Preloaded into a proxy by `bench/profile.ts --mode alloc` (`--import`): V8's sampling heap
 * profiler, keeping the samples of objects already collected (what `--heap-prof` drops), so the
 * profile is where the process allocates, not what it holds. Sampling starts on SIGUSR2 (after the
 * warm-up) and the profile is written when the process exits, to
 * `<tmpdir>/alloc-<pid>.heapprofile`.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Mean bytes between samples: small enough for a few samples per request. */
const SAMPLING_INTERVAL = 1024;

const session = new Session();
session.connect();
let sampling = false;

process.on('SIGUSR2', () => {
  if (sampling) return;
  sampling = true;
  session.post('HeapProfiler.startSampling', {
    samplingInterval: SAMPLING_INTERVAL,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
});

process.on('exit', () => {
  if (!sampling) return;
  // Same-thread sessions answer synchronously, so the profile is written before the process ends.
  session.post('HeapProfiler.stopSampling', (error, result) => {
    if (error) throw error;
    writeFileSync(join(tmpdir(), `alloc-${process.pid}.heapprofile`), JSON.stringify(result.profile));
  });
});
