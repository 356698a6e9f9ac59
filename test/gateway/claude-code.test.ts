/**
 * Claude Code (the real pinned CLI, in print mode, offline) through the gateway to the simulator:
 * a scripted session with a tool call the CLI runs itself, passed through to a provider that speaks
 * the Messages API and translated for one that speaks only chat completions. A recording proxy in
 * front of the simulator shows what reached the provider (the tool's result among it).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runClaudeCode } from '../helpers/claude-code.js';
import { metricValue, startGateway, type StartedGateway } from '../helpers/gateway.js';
import { startSim, type StartedSim } from '../helpers/sim.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';
import { writeModels } from '../simulator/support.js';

const KEY = 'sk-claude-code-5d0f';

let sim: StartedSim;
let proxy: RecordingUpstream;
let gateway: StartedGateway;
let workdir: string;

beforeAll(async () => {
  const { files } = writeModels({
    'cc.toml':
      'name = "cc"\noutput_tokens = 12\n[latency]\nprefill_ms = 0\nprefill_per_token_ms = 0\ndecode_ms = 1\ndecode_per_seq_ms = 0\n',
  });
  sim = await startSim(['--enable-directives', '--model', files[0]!]);
  // Records each request and forwards it to the simulator, its answer streamed back as it comes.
  proxy = await startUpstream(async (req, res) => {
    const answer = await fetch(`${sim.baseUrl}${req.url}`, {
      method: req.method,
      headers: { 'content-type': 'application/json' },
      body: req.body,
    });
    res.writeHead(answer.status, {
      'content-type': answer.headers.get('content-type') ?? 'application/json',
    });
    for await (const chunk of answer.body!) res.write(chunk);
    res.end();
  });
  gateway = await startGateway({
    auth: { key_definitions: { dev: { key: KEY } } },
    targets: {
      native: { url: `${proxy.url}/v1`, api: 'anthropic', gateway_model: 'cc', keys: ['dev'] },
      chat: { url: `${proxy.url}/v1`, gateway_model: 'cc', keys: ['dev'] },
    },
  });
  workdir = realpathSync(mkdtempSync(join(tmpdir(), 'claude-code-work-')));
});

afterAll(async () => {
  await gateway?.stop();
  await Promise.all([proxy?.close(), sim?.stop()]);
  if (workdir !== undefined) rmSync(workdir, { recursive: true, force: true });
});

describe.each(['native', 'chat'])('Claude Code through the gateway, %s', { timeout: 120_000 }, (alias) => {
  it('completes a session with a tool call the CLI runs itself', async () => {
    const secret = `contents-${randomUUID()}`;
    const file = join(workdir, `${alias}.txt`);
    writeFileSync(file, `${secret}\n`);
    proxy.requests.length = 0;
    const directive = JSON.stringify({
      text: 'Reading it.',
      tool_calls: [{ name: 'Read', arguments: { file_path: file } }],
    });
    const run = await runClaudeCode({
      baseUrl: gateway.url,
      apiKey: KEY,
      model: alias,
      cwd: workdir,
      prompt: `Read the file and tell me what it says.\n@sim ${directive}`,
    });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.result).toMatchObject({ type: 'result', is_error: false });

    // The provider got the first turn, then the tool's result (the file's text) in the second.
    const paths = proxy.requests.map((request) => new URL(request.url, proxy.url).pathname);
    expect(paths).toEqual(
      Array(paths.length).fill(alias === 'native' ? '/v1/messages' : '/v1/chat/completions'),
    );
    expect(paths.length).toBeGreaterThanOrEqual(2);
    const last = proxy.requests.at(-1)!.body;
    expect(last).toContain(secret);
    if (alias === 'native') expect(last).toContain('"tool_result"');
    else expect(last).toContain('"role":"tool"');

    const metrics = await gateway.metrics();
    expect(
      metricValue(metrics, 'gateway_requests_total', { model: alias, status: '200', outcome: 'completed' }),
    ).toBeGreaterThanOrEqual(2);
  });
});
