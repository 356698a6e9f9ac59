import type { Logger } from 'pino';
import type { ModelConfig } from './config/load.js';
import type { Engine } from './engine/engine.js';
import type { SimMetrics } from './metrics/metrics.js';
import type { ReasoningField } from './openai/frames.js';

export interface ModelRuntime {
  config: ModelConfig;
  engine: Engine;
}

/** Everything a request handler needs; built once at startup. */
export interface SimContext {
  models: Map<string, ModelRuntime>;
  /** Serves requests that name no model (vLLM's behaviour with one served model). */
  defaultModel: ModelRuntime;
  enableDirectives: boolean;
  reasoningField: ReasoningField;
  metrics: SimMetrics;
  log: Logger;
  /** Unix seconds, reported as `created` by /v1/models. */
  startedAt: number;
}
