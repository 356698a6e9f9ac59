import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { describeListenError } from '../lib/listen-error.js';
import { loadModels } from './config/load.js';
import { Engine } from './engine/engine.js';
import { formatFault } from './faults/modes.js';
import { createSimServer } from './http/server.js';
import { SimMetrics } from './metrics/metrics.js';
import type { ReasoningField } from './openai/frames.js';
import type { ModelRuntime, SimContext } from './runtime.js';

export interface ServeOptions {
  host: string;
  port: number;
  modelFiles: string[];
  modelsDir: string | undefined;
  enableDirectives: boolean;
  /** Overrides every model's `[scheduler] max_waiting`. */
  maxWaiting: number | undefined;
  reasoningField: ReasoningField;
}

export interface RunningSim {
  server: Server;
  context: SimContext;
  host: string;
  port: number;
  close: () => Promise<void>;
}

export type ServeResult = { ok: true; sim: RunningSim } | { ok: false; message: string };

/** Loads the models, builds one engine per model and starts listening. */
export async function serve(options: ServeOptions, log: Logger): Promise<ServeResult> {
  const loaded = loadModels(options.modelFiles, options.modelsDir);
  if (!loaded.ok) return loaded;

  const metrics = new SimMetrics();
  const models = new Map<string, ModelRuntime>();
  for (const config of loaded.models) {
    const maxWaiting = options.maxWaiting ?? config.maxWaiting;
    const engine = new Engine(
      config.name,
      config.latency,
      config.maxNumSeqs,
      maxWaiting,
      metrics.observerFor(config.name),
      undefined,
      config.prefixCache,
    );
    metrics.track(engine);
    models.set(config.name, { config: { ...config, maxWaiting }, engine });
  }
  const context: SimContext = {
    models,
    defaultModel: models.values().next().value!,
    enableDirectives: options.enableDirectives,
    reasoningField: options.reasoningField,
    metrics,
    log,
    startedAt: Math.floor(Date.now() / 1000),
  };
  log.info(
    {
      models: loaded.models.map((m) => ({
        name: m.name,
        source: m.source,
        max_num_seqs: m.maxNumSeqs,
        max_waiting: options.maxWaiting ?? m.maxWaiting,
        fault: m.fault ? formatFault(m.fault) : null,
      })),
      enable_directives: options.enableDirectives,
    },
    'models loaded',
  );

  const server = createSimServer(context);
  const listening = await new Promise<{ ok: true } | { ok: false; message: string }>((resolve) => {
    server.once('error', (err) =>
      resolve({
        ok: false,
        message: describeListenError(err, {
          listener: '',
          host: options.host,
          port: options.port,
          portOption: '--port',
          hostOption: '--host',
        }),
      }),
    );
    server.listen(options.port, options.host, () => resolve({ ok: true }));
  });
  if (!listening.ok) return listening;
  const port = (server.address() as AddressInfo).port;
  log.info({ listener: 'sim', host: options.host, port }, 'listening');

  const close = async (): Promise<void> => {
    for (const runtime of models.values()) runtime.engine.stop();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  };
  return { ok: true, sim: { server, context, host: options.host, port, close } };
}
