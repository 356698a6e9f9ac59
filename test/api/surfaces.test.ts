import { describe, expect, it } from 'vitest';
import { MODELS_PATH, SURFACES, surfaceOf } from '../../src/gateway/api/surfaces.js';

/** The table of API surfaces: what each stage of the request path reads of a request's path. */
describe('API surfaces', () => {
  it('describes each proxied path once', () => {
    const table = Object.fromEntries(
      SURFACES.map((s) => [
        s.path,
        [
          s.operation,
          s.streamOptions,
          s.streamEnd !== undefined,
          s.reportsUsage,
          s.strict,
          s.reasoning,
          s.sanitizable,
        ],
      ]),
    );
    expect(table).toEqual({
      '/v1/chat/completions': ['chat', true, true, true, 'chat_completions', 'chat_completions', true],
      '/v1/completions': ['text_completion', true, true, true, undefined, undefined, false],
      '/v1/responses': ['chat', false, false, true, 'responses', 'responses', false],
      '/v1/embeddings': ['embeddings', false, false, true, 'embeddings', undefined, false],
      '/v1/messages': ['chat', false, true, true, 'messages', undefined, false],
      '/v1/messages/count_tokens': ['chat', false, false, false, undefined, undefined, false],
    });
  });

  it('names a surface by the exact path only', () => {
    expect(surfaceOf('/v1/chat/completions')?.strict).toBe('chat_completions');
    expect(surfaceOf('/v1/chat/completions/')).toBeUndefined();
    expect(surfaceOf('/v1/chat/completions?x=1')).toBeUndefined();
    expect(surfaceOf(MODELS_PATH)).toBeUndefined();
    expect(surfaceOf('/v2/other')).toBeUndefined();
  });
});
