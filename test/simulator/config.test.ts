import { describe, expect, it } from 'vitest';
import { builtinModel, loadModels, parseModelToml } from '../../src/simulator/config/load.js';
import { writeModels } from './support.js';

describe('model TOML', () => {
  it('fills defaults and reads every table', () => {
    const result = parseModelToml(
      `name = "llama"
output_tokens = 12
[latency]
prefill_ms = 50
decode_ms = 0
[scheduler]
max_num_seqs = 4
max_waiting = 9
[prefix_cache]
capacity_tokens = 4096
[fault]
mode = "cut_mid_frame"
utf8 = true
`,
      'llama.toml',
    );
    expect(result).toEqual({
      ok: true,
      model: {
        name: 'llama',
        outputTokens: 12,
        latency: { prefill_ms: 50, prefill_per_token_ms: 0.02, decode_ms: 0, decode_per_seq_ms: 0.1 },
        maxNumSeqs: 4,
        maxWaiting: 9,
        prefixCache: { blockTokens: 16, capacityTokens: 4096 },
        fault: { mode: 'cut_mid_frame', afterChunks: 3, delayMs: 10, utf8: true },
        source: 'llama.toml',
      },
    });
  });

  it('allows an all-zero latency model', () => {
    const result = parseModelToml(
      'name = "z"\n[latency]\nprefill_ms = 0\nprefill_per_token_ms = 0\ndecode_ms = 0\ndecode_per_seq_ms = 0\n',
      'z.toml',
    );
    expect(result.ok && result.model.latency).toEqual({
      prefill_ms: 0,
      prefill_per_token_ms: 0,
      decode_ms: 0,
      decode_per_seq_ms: 0,
    });
  });

  it.each([
    ['name = "a"\ncolour = 1\n', 'unknown key "colour"'],
    ['name = "a"\n[latency]\ndecode = 1\n', 'unknown key "latency.decode"'],
    ['name = "a"\n[scheduler]\nmax_seqs = 1\n', 'unknown key "scheduler.max_seqs"'],
    ['name = "a"\n[fault]\nmode = "reset"\nafter = 1\n', 'unknown key "fault.after"'],
    ['name = "a"\n[fault]\nmode = "explode"\n', 'fault.mode'],
    ['name = "a"\n[fault]\nafter_chunks = 1\n', 'fault.mode'],
    ['name = "a"\n[fault]\nmode = "reset"\nafter_chunks = -1\n', 'fault.after_chunks'],
    ['name = "a"\n[fault]\nmode = "reset"\nutf8 = "yes"\n', 'fault.utf8'],
    ['name = "a"\n[scheduler]\nmax_num_seqs = 0\n', 'scheduler.max_num_seqs'],
    ['name = "a"\n[scheduler]\nmax_waiting = -1\n', 'scheduler.max_waiting'],
    ['name = "a"\n[latency]\ndecode_ms = -1\n', 'latency.decode_ms'],
    ['name = "a"\n[prefix_cache]\nblock_tokens = 0\n', 'prefix_cache.block_tokens'],
    ['name = "a"\n[prefix_cache]\ncapacity = 10\n', 'unknown key "prefix_cache.capacity"'],
    ['[latency]\n', 'name'],
    ['name = \n', 'invalid TOML'],
  ])('refuses %j naming the file and the key', (text, expected) => {
    const result = parseModelToml(text, '/models/a.toml');
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.message.startsWith('/models/a.toml: ')).toBe(true);
      expect(result.message).toContain(expected);
    }
  });

  it('loads a directory in name order, and refuses duplicate names', () => {
    const { dir } = writeModels({
      'b.toml': 'name = "bee"\n',
      'a.toml': 'name = "ay"\n',
      'notes.txt': 'ignored',
    });
    const loaded = loadModels([], dir);
    expect(loaded.ok && loaded.models.map((m) => m.name)).toEqual(['ay', 'bee']);

    const dup = writeModels({ 'x.toml': 'name = "same"\n', 'y.toml': 'name = "same"\n' });
    const refused = loadModels(dup.files, undefined);
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.message).toContain('"same" is already defined');
  });

  it('serves the built-in model "sim" with sensible latency when no file is given', () => {
    const loaded = loadModels([], undefined);
    expect(loaded).toEqual({ ok: true, models: [builtinModel()] });
    const model = builtinModel();
    expect(model.name).toBe('sim');
    expect(model.latency.prefill_ms).toBeGreaterThan(0);
    expect(model.latency.decode_ms).toBeGreaterThan(0);
  });
});

describe('example model files', () => {
  it('all load (examples/sim)', () => {
    const loaded = loadModels([], new URL('../../examples/sim', import.meta.url).pathname);
    expect(loaded.ok ? loaded.models.map((m) => m.name).sort() : loaded.message).toEqual([
      'flaky',
      'llama-8b',
      'small-queue',
      'zero',
    ]);
  });
});
