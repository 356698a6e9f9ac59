/** Client-side helpers for talking to a started gateway over HTTP. */

/**
 * Read a response body to its end. `failed` is true when the body ended with a transport error
 * (cut, reset, destroyed) rather than a clean end; `bytes` holds what arrived before it.
 */
export async function readBody(response: Response): Promise<{ bytes: Buffer; failed: boolean }> {
  const chunks: Uint8Array[] = [];
  let failed = false;
  try {
    const reader = response.body!.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
    }
  } catch {
    failed = true;
  }
  return { bytes: Buffer.concat(chunks), failed };
}

/** A one-message chat request body for `model`. */
export const chat = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});
