// The in-cluster client of the real-cluster suite. It runs in a Pod from the gateway image (node,
// no shell), so requests go through the Service and kube-proxy like a real client's. The spec is
// one JSON argument; the result is the last line printed, as JSON. Progress events are printed as
// JSON lines before it ({"event": "first-chunk"}), so the test can act while a stream is open.
//
//   {"mode": "get", "url": "..."}
//   {"mode": "stream", "url": "...", "body": {...}, "headers": {...}}
//   {"mode": "requests", "url": "...", "bodies": [{...}, ...], "headers": {...}, "count": 20, "concurrency": 4}
//   {"mode": "load", "url": "...", "bodies": [{...}, ...], "concurrency": 6, "maxMs": 600000}
//   {"mode": "until", "url": "...", "body": {...}, "checks": [{"headers": {...}, "status": 200}, ...],
//    "timeoutMs": 120000}
//   {"mode": "poll", "urls": ["http://10.244.0.5:9090/metrics", ...], "metric": "...", "intervalMs": 250,
//    "maxMs": 60000, "tcp": "10.96.0.1:443"}
//
// "poll" reads one sample of each URL's Prometheus text every intervalMs for maxMs (it needs no
// Kubernetes API while it runs) and reports, per URL, each change of the value with its time
// (`at`, epoch milliseconds; `value` null when the URL did not answer). With `tcp`, it also tries a
// TCP connection to that address each round and reports its changes under that key (1 connected,
// 0 not within a second). With `"untilBackUp": true` it stops early, once every key has been below
// 1 and is 1 again.
//
// "until" repeats the checks (one request each) until every one answers its status, and reports
// when (`at`, epoch milliseconds) and after how many rounds, or `timedOut`.
// "requests" and "load" cycle through `bodies` (a mix of streamed and non-streamed requests).
// "load" runs until SIGUSR2 (or maxMs, a bound), then lets the requests in flight finish. Each
// request is one of:
//   completed  status 200 and a whole answer: a JSON body with choices, or a stream that ended
//              with `data: [DONE]`
//   cut        status 200, then the body broke or ended early (no [DONE], invalid JSON)
//   failed     anything else: a refused or reset connection, a timeout, a status other than 200

import { connect } from 'node:net';

const spec = JSON.parse(process.argv[2] ?? '{}');

const emit = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);

async function once(target, body, onFirstChunk) {
  const started = performance.now();
  const result = { status: 0, chunks: 0, done: false, error: null, text: '', ms: 0, headers: {} };
  let raw = '';
  try {
    const res = await fetch(target.url, {
      method: body ? 'POST' : 'GET',
      headers: { 'content-type': 'application/json', ...(target.headers ?? {}) },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(target.timeoutMs ?? 120_000),
    });
    result.status = res.status;
    for (const name of ['x-ratelimit-remaining-requests', 'retry-after']) {
      const value = res.headers.get(name);
      if (value !== null) result.headers[name] = value;
    }
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const bytes of res.body ?? []) {
      const text = decoder.decode(bytes, { stream: true });
      if (raw.length < 262_144) raw += text;
      buffer += text;
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
  result.text = raw.slice(0, 65_536);
  return result;
}

function classify(body, r) {
  if (r.status !== 200) return 'failed';
  if (r.error !== null) return 'cut';
  if (body?.stream === true) return r.done ? 'completed' : 'cut';
  if (!body) return 'completed';
  try {
    return Array.isArray(JSON.parse(r.text).choices) ? 'completed' : 'cut';
  } catch {
    return 'cut';
  }
}

function summarize(records, ms) {
  const statuses = {};
  const counts = { completed: 0, failed: 0, cut: 0 };
  let streams = 0;
  for (const { body, r, outcome } of records) {
    statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    counts[outcome] += 1;
    if (body?.stream === true) streams += 1;
  }
  return {
    sent: records.length,
    ...counts,
    streams,
    plain: records.length - streams,
    statuses,
    errors: records
      .filter((x) => x.outcome !== 'completed')
      .slice(0, 10)
      .map(({ body, r, outcome }) => ({
        outcome,
        stream: body?.stream === true,
        status: r.status,
        error: r.error,
        chunks: r.chunks,
        done: r.done,
        text: r.text.slice(0, 300),
      })),
    seconds: Math.round(ms / 100) / 10,
  };
}

async function batch(bodies, concurrency, keepGoing) {
  const records = [];
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (keepGoing(next)) {
      const body = bodies[next % bodies.length];
      next += 1;
      const r = await once(spec, body);
      records.push({ body, r, outcome: classify(body, r) });
    }
  };
  await Promise.all(Array.from({ length: concurrency ?? 1 }, worker));
  return summarize(records, performance.now() - started);
}

async function main() {
  switch (spec.mode) {
    case 'get': {
      const r = await once(spec);
      emit({ status: r.status, error: r.error, body: r.text });
      return;
    }
    case 'stream': {
      const r = await once(spec, spec.body, () => emit({ event: 'first-chunk' }));
      emit({ ...r, text: undefined, outcome: classify(spec.body, r) });
      return;
    }
    case 'requests': {
      emit(await batch(spec.bodies, spec.concurrency, (n) => n < spec.count));
      return;
    }
    case 'load': {
      let stop = false;
      process.on('SIGUSR2', () => {
        stop = true;
        emit({ event: 'stopping' });
      });
      const bound = setTimeout(() => (stop = true), spec.maxMs ?? 600_000);
      emit({ event: 'load-started' });
      const summary = await batch(spec.bodies, spec.concurrency, () => !stop);
      clearTimeout(bound);
      emit(summary);
      return;
    }
    case 'until': {
      const deadline = Date.now() + (spec.timeoutMs ?? 120_000);
      emit({ event: 'polling' });
      for (let rounds = 1; ; rounds += 1) {
        const statuses = [];
        for (const check of spec.checks) {
          statuses.push((await once({ ...spec, headers: check.headers }, spec.body)).status);
        }
        const met = spec.checks.every((check, i) => statuses[i] === check.status);
        if (met || Date.now() > deadline) {
          emit({ at: Date.now(), rounds, statuses, timedOut: !met });
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, spec.intervalMs ?? 250));
      }
    }
    case 'poll': {
      const changes = Object.fromEntries(
        [...spec.urls, ...(spec.tcp ? [spec.tcp] : [])].map((key) => [key, []]),
      );
      const record = (key, value) => {
        const seen = changes[key];
        if (seen.length === 0 || seen.at(-1).value !== value) seen.push({ at: Date.now(), value });
      };
      const reachable = (address) =>
        new Promise((resolve) => {
          const colon = address.lastIndexOf(':');
          const socket = connect({ host: address.slice(0, colon), port: Number(address.slice(colon + 1)) });
          const done = (value) => {
            socket.destroy();
            resolve(value);
          };
          socket.setTimeout(1000, () => done(0));
          socket.once('connect', () => done(1));
          socket.once('error', () => done(0));
        });
      const sampleOf = (text) => {
        for (const line of text.split('\n'))
          if (line.startsWith(`${spec.metric} `) || line.startsWith(`${spec.metric}{`))
            return Number(line.slice(line.lastIndexOf(' ') + 1));
        return null;
      };
      const deadline = Date.now() + (spec.maxMs ?? 60_000);
      emit({ event: 'polling' });
      const backUp = () =>
        Object.values(changes).every((seen) => seen.some((c) => c.value !== 1) && seen.at(-1)?.value === 1);
      while (Date.now() < deadline && !(spec.untilBackUp && backUp())) {
        await Promise.all([
          ...spec.urls.map(async (url) => {
            const r = await once({ url, timeoutMs: 2_000 });
            record(url, r.status === 200 ? sampleOf(r.text) : null);
          }),
          ...(spec.tcp ? [reachable(spec.tcp).then((value) => record(spec.tcp, value))] : []),
        ]);
        await new Promise((resolve) => setTimeout(resolve, spec.intervalMs ?? 250));
      }
      emit({ changes });
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
