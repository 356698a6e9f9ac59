/**
 * The resilience scorecard: every provider fault the simulator (or a stub) can produce, against this
 * gateway (default and strict mode), Portkey's open-source gateway and the provider directly, read
 * by the same two clients (raw HTTP and the official openai SDK). Writes the markdown table.
 *
 *   node bench/scorecard/run.ts [--quick] [--out docs/resilience-scorecard.md] [--json results.json]
 *                               [--systems direct,gateway,gateway-strict,portkey]
 *
 * `--quick` (under two minutes, run by `make test`): the gateway's two modes only, two requests a
 * cell, shorter load rows, no Messages rows (the Messages fault matrix of the test suite reads the
 * gateway through the Anthropic SDK there); it writes no markdown unless `--out` is given.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem, release } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from '../support/process.ts';
import { observe, runBatch, summarize, type Cell } from './cells.ts';
import { observeRaw, observeSdk } from './observe.ts';
import { cancelRow, capacityRow, drainRow, reloadRow, type Pace } from './lifecycle.ts';
import { messagesRows } from './messages-rows.ts';
import { MESSAGES_SCENARIOS } from './messages-scenarios.ts';
import { renderScorecard, totals, type FaultRow, type Results } from './render.ts';
import { FAULT_SCENARIOS, type World } from './scenarios.ts';
import {
  aliasOf,
  directSystem,
  gatewayConfig,
  gatewaySystem,
  messagesAliasOf,
  portkeyConfig,
  portkeyMessagesConfig,
  portkeySystem,
  type ClientKind,
  type GatewaySystem,
  type System,
  type SystemId,
} from './systems.ts';
import { refusedPort, startSim, startStub, type Sim, type Stub } from './world.ts';

const ALL_SYSTEMS: readonly SystemId[] = ['direct', 'gateway', 'gateway-strict', 'portkey'];
const CLIENTS: readonly ClientKind[] = ['sdk', 'raw'];

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    out: { type: 'string' },
    json: { type: 'string' },
    systems: { type: 'string' },
  },
});
const quick = values.quick;
const wanted = (values.systems?.split(',') ??
  (quick ? ['gateway', 'gateway-strict'] : ALL_SYSTEMS)) as SystemId[];
for (const id of wanted)
  if (!ALL_SYSTEMS.includes(id)) {
    process.stderr.write(`--systems: unknown system \`${id}\` (one of ${ALL_SYSTEMS.join(', ')})\n`);
    process.exit(2);
  }
const out = values.out ?? (quick ? undefined : join(ROOT, 'docs/resilience-scorecard.md'));
const REQUESTS = quick ? 2 : 8;
// The Messages rows are read two ways on up to eight columns: one batch of four a cell keeps the
// whole run under ten minutes (their fault paths are deterministic, as the chat rows').
const MESSAGES_REQUESTS = 4;
const HANG_MS = quick ? 8000 : 12_000;
const pace: Pace = quick
  ? { phases: [1, 2, 1], reloadSeconds: 2, cancellations: 1, hangMs: HANG_MS }
  : { phases: [3, 6, 3], reloadSeconds: 4, cancellations: 3, hangMs: HANG_MS };

const log = (line: string): void => void process.stderr.write(`scorecard: ${line}\n`);
const started = performance.now();
// Every wait of the run is bounded; this bounds the whole, whatever goes wrong (the exit stops every
// process the run started).
const WATCHDOG_MS = (quick ? 3 : 15) * 60_000;
setTimeout(() => {
  log(`still running after ${WATCHDOG_MS / 60_000} minutes: stopped`);
  void stopAll().finally(() => process.exit(1));
}, WATCHDOG_MS).unref();

function versionOf(path: string): string {
  return (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version;
}

function commit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

const stoppers: (() => Promise<void>)[] = [];
async function stopAll(): Promise<void> {
  for (const stop of stoppers.splice(0).reverse()) await stop().catch(() => {});
}

async function main(): Promise<number> {
  log(`${quick ? 'quick' : 'full'} run: ${wanted.join(', ')}; ${REQUESTS} requests a cell`);
  const sim: Sim = await startSim();
  stoppers.push(() => sim.stop());
  const stubs: Stub[] = [];
  for (const behaviour of ['status_500', 'status_429', 'silent', 'error_200', 'error_then_done'] as const) {
    const stub = await startStub(behaviour);
    stoppers.push(() => stub.stop());
    stubs.push(stub);
  }
  const world: World = {
    sim,
    refused: await refusedPort(),
    status500: stubs[0]!,
    status429: stubs[1]!,
    silent: stubs[2]!,
    error200: stubs[3]!,
    errorThenDone: stubs[4]!,
  };
  const expected = await answerOf(world, 'healthy');
  const expectedLong = await answerOf(world, 'long-stream');

  const systems: System[] = [];
  const notRun: { id: SystemId; reason: string }[] = [];
  let portkeyVersion: string | undefined;
  for (const id of wanted) {
    if (id === 'direct') systems.push(directSystem(world));
    else if (id === 'portkey') {
      const portkey = await portkeySystem(world, log);
      if ('reason' in portkey) {
        notRun.push({ id, reason: portkey.reason });
        continue;
      }
      portkeyVersion = portkey.label.split(' ').pop();
      systems.push(portkey);
    } else systems.push(await gatewaySystem(world, id === 'gateway-strict'));
    const system = systems[systems.length - 1]!;
    stoppers.push(() => system.stop());
  }

  const faults: FaultRow[] = [];
  for (const scenario of FAULT_SCENARIOS) {
    const undo = await scenario.prepare?.(world);
    const cells: FaultRow['cells'] = {};
    for (const system of systems) {
      const byClient = {} as Record<ClientKind, Cell>;
      for (const client of CLIENTS) {
        const target = system.target(scenario, client);
        const ask = { stream: scenario.stream, expected, hangMs: HANG_MS };
        byClient[client] = summarize(await runBatch(REQUESTS, 4, () => observe(client, target, ask)));
      }
      cells[system.id] = byClient;
      log(`row ${scenario.id} ${system.id}: sdk ${brief(byClient.sdk)}; raw ${brief(byClient.raw)}`);
    }
    await undo?.();
    faults.push({ id: scenario.id, title: scenario.title, cells });
  }
  const messages = quick
    ? undefined
    : await messagesRows(world, systems, { requests: MESSAGES_REQUESTS, hangMs: HANG_MS, log });

  const capacity: Results['capacity'] = {};
  for (const system of systems) {
    capacity[system.id] = await capacityRow(world, system, pace, expected);
    log(`row 14 ${system.id}: shift ${capacity[system.id]!.shiftMs ?? 'never'} ms`);
  }
  const reload: Results['reload'] = {};
  for (const system of systems)
    if (isGateway(system)) {
      reload[system.id] = await reloadRow(system, system.config, pace, expectedLong);
      log(`row 15 ${system.id}: ${brief(reload[system.id]!.cell)}`);
    }
  const cancel: Results['cancel'] = {};
  for (const system of systems) {
    cancel[system.id] = {
      raw: await cancelRow(world, system, 'raw', pace, expectedLong, observeRaw),
      sdk: await cancelRow(world, system, 'sdk', pace, expectedLong, observeSdk),
    };
    log(`row 17 ${system.id}: raw ${cancel[system.id]!.raw.seenMs.join(',')} ms`);
  }
  const drain: Results['drain'] = {};
  for (const id of wanted) {
    if (id === 'direct' || notRun.some((n) => n.id === id)) continue;
    // A fresh process each: the drain ends it.
    const fresh =
      id === 'portkey'
        ? await portkeySystem(world, log)
        : await gatewaySystem(world, id === 'gateway-strict', ['--shutdown-delay-secs', '1']);
    if ('reason' in fresh) continue;
    stoppers.push(() => fresh.stop());
    const service = 'gateway' in fresh ? fresh.gateway.service : fresh.portkey.service;
    drain[id] = await drainRow(fresh, () => service.proc.kill('SIGTERM'), pace, expectedLong);
    log(`row 16 ${id}: open ${brief(drain[id]!.inFlight)}; after ${brief(drain[id]!.after)}`);
  }
  await stopAll();

  const example = FAULT_SCENARIOS.find((scenario) => scenario.id === '7')!;
  const gatewayExample = gatewayConfig(world, false) as { targets: Record<string, unknown> };
  const messagesExample = MESSAGES_SCENARIOS.find((scenario) => scenario.id === 'M1')!;
  const messagesAlias = messagesAliasOf(messagesExample, 'passed-through', 'final');
  const results: Results = {
    date: new Date().toISOString().slice(0, 10),
    quick,
    durationSeconds: Math.round((performance.now() - started) / 1000),
    versions: {
      gateway: `${versionOf(join(ROOT, 'package.json'))} (${commit()})`,
      'Node.js': process.versions.node,
      'openai SDK': versionOf(join(ROOT, 'node_modules/openai/package.json')),
      'Anthropic SDK': versionOf(join(ROOT, 'node_modules/@anthropic-ai/sdk/package.json')),
      ...(portkeyVersion === undefined ? {} : { Portkey: portkeyVersion }),
    },
    machine: `${cpus().length} × ${cpus()[0]?.model.trim() ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Linux ${release()}`,
    systems: systems.map((s) => ({ id: s.id, label: s.label })),
    notRun,
    requestsPerCell: REQUESTS,
    hangMs: HANG_MS,
    faults,
    ...(messages === undefined ? {} : { messages }),
    capacity,
    reload,
    drain,
    cancel,
    configs: {
      gateway: {
        strict_mode: false,
        timeouts: (gatewayExample as { timeouts?: unknown }).timeouts,
        targets: { [aliasOf(example, 'sdk')]: gatewayExample.targets[aliasOf(example, 'sdk')] },
      },
      portkey: portkeyConfig(example.preferred(world), world),
      gatewayMessages: { targets: { [messagesAlias]: gatewayExample.targets[messagesAlias] } },
      portkeyMessages: portkeyMessagesConfig(messagesExample.model, 'passed-through', world),
    },
    simOrigin: sim.origin,
  };
  if (out !== undefined) {
    writeFileSync(out, renderScorecard(results));
    log(`wrote ${out}`);
  }
  if (values.json !== undefined) writeFileSync(values.json, JSON.stringify(results, null, 2));
  for (const system of systems)
    for (const client of CLIENTS) {
      const t = totals(results, system.id, client);
      log(
        `${system.id} ${client}: ${t.sent} sent, ${t.completed} completed, ${t.visible} visible, ${t.silent} silent, ${t.hung} hung`,
      );
    }
  log(`done in ${results.durationSeconds} s`);
  return 0;
}

function isGateway(system: System): system is GatewaySystem {
  return 'gateway' in system;
}

function brief(cell: Cell): string {
  const c = cell.counts;
  return `${c.completed}/${c.visible}/${c.silent}/${c.hung}`;
}

/** A model's whole answer, straight from the simulator. */
async function answerOf(world: World, model: string): Promise<string> {
  const response = await fetch(`${world.sim.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Say something.' }] }),
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await response.json()) as { choices: { message: { content: string } }[] };
  return body.choices[0]!.message.content;
}

main().then(
  async (code) => {
    await stopAll();
    process.exit(code);
  },
  async (error: unknown) => {
    log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    await stopAll();
    process.exit(1);
  },
);
