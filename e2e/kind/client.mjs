// The in-cluster client of the kind e2e. It runs in a Pod from the gateway image (node, no shell),
// so requests go through the Service and kube-proxy like a real client's. The spec is one JSON
// argument; the result is the last line printed, as JSON. Progress events are printed as JSON
// lines before it ({"event": "first-chunk"}), so the test can act while a stream is open.
//
//   {"mode": "get", "url": "..."}
//   {"mode": "requests", "url": "...", "body": {...}, "headers": {...}, "count": 20, "concurrency": 4}
//   {"mode": "load", "url": "...", "body": {...}, "durationMs": 90000, "concurrency": 6}
//   {"mode": "stream", "url": "...", "body": {...}, "headers": {...}}
//
// A request counts as ok when the status is 200 and, for a stream, the body ended with
// `data: [DONE]` and no transport error.

const spec = JSON.parse(process.argv[2] ?? '{}');

const emit = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);

async function once(target, onFirstChunk) {
  const started = performance.now();
  const result = { status: 0, chunks: 0, done: false, error: null, text: '', ms: 0 };
  try {
    const res = await fetch(target.url, {
      method: target.body ? 'POST' : 'GET',
      headers: { 'content-type': 'application/json', ...(target.headers ?? {}) },
      body: target.body ? JSON.stringify(target.body) : undefined,
      signal: AbortSignal.timeout(target.timeoutMs ?? 120_000),
    });
    result.status = res.status;
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const bytes of res.body ?? []) {
      const text = decoder.decode(bytes, { stream: true });
      buffer += text;
      if (result.text.length < 65_536) result.text += text;
      let newline;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline).trim();
        buffer = buffer.slice(newline + 1);
        if (!line.startsWith('data:')) continue;
        const data = line.slice(5).trim();
        if (data === '[DONE]') result.done = true;
        else {
          result.chunks += 1;
          if (result.chunks === 1) onFirstChunk?.();
        }
      }
    }
  } catch (error) {
    result.error = `${error?.name ?? 'Error'}: ${error?.cause?.code ?? error?.message ?? error}`;
  }
  result.ms = Math.round(performance.now() - started);
  return result;
}

const isStream = (target) => target.body?.stream === true;
const succeeded = (target, r) => r.status === 200 && r.error === null && (!isStream(target) || r.done);

function summarize(target, results) {
  const statuses = {};
  for (const r of results) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
  const failures = results.filter((r) => !succeeded(target, r));
  return {
    total: results.length,
    ok: results.length - failures.length,
    failed: failures.length,
    incompleteStreams: isStream(target) ? results.filter((r) => r.status === 200 && !r.done).length : 0,
    statuses,
    errors: failures
      .slice(0, 10)
      .map((r) => ({ status: r.status, error: r.error, chunks: r.chunks, done: r.done })),
  };
}

async function main() {
  switch (spec.mode) {
    case 'get': {
      const r = await once(spec);
      emit({ status: r.status, error: r.error, body: r.text });
      return;
    }
    case 'stream': {
      const r = await once(spec, () => emit({ event: 'first-chunk' }));
      emit({ ...r, text: undefined });
      return;
    }
    case 'requests': {
      const results = [];
      let next = 0;
      const worker = async () => {
        while (next < spec.count) {
          next += 1;
          results.push(await once(spec));
        }
      };
      await Promise.all(Array.from({ length: spec.concurrency ?? 1 }, worker));
      emit(summarize(spec, results));
      return;
    }
    case 'load': {
      const results = [];
      const until = performance.now() + spec.durationMs;
      const worker = async () => {
        while (performance.now() < until) results.push(await once(spec));
      };
      emit({ event: 'load-started' });
      await Promise.all(Array.from({ length: spec.concurrency ?? 1 }, worker));
      emit(summarize(spec, results));
      return;
    }
    default:
      throw new Error(`unknown mode ${spec.mode}`);
  }
}

main().catch((error) => {
  emit({ fatal: String(error?.stack ?? error) });
  process.exit(1);
});
