/**
 * An estimate of a Messages request's input tokens, for `/v1/messages/count_tokens` on a route
 * whose providers cannot count them (chat-completions providers have no such endpoint): the UTF-8
 * bytes of everything the model reads (system prompt, message text, tool calls and results, tool
 * definitions) at four bytes per token, the usual ratio for English text with BPE tokenizers, plus
 * a few tokens per message for its role and framing. It is an estimate, not the provider's count.
 */

const BYTES_PER_TOKEN = 4;
const TOKENS_PER_MESSAGE = 4;

export function estimateInputTokens(request: Record<string, unknown>): number {
  let bytes = textBytes(request.system);
  const messages = Array.isArray(request.messages) ? request.messages : [];
  for (const message of messages) {
    if (typeof message === 'object' && message !== null)
      bytes += textBytes((message as { readonly content?: unknown }).content);
  }
  if (Array.isArray(request.tools)) bytes += Buffer.byteLength(JSON.stringify(request.tools));
  return Math.ceil(bytes / BYTES_PER_TOKEN) + TOKENS_PER_MESSAGE * messages.length;
}

/** The bytes of the text a content value carries: a string, or blocks (text, tool calls and results). */
function textBytes(content: unknown): number {
  if (typeof content === 'string') return Buffer.byteLength(content);
  if (!Array.isArray(content)) return 0;
  let bytes = 0;
  for (const block of content) {
    if (typeof block !== 'object' || block === null) continue;
    const { text, thinking, input, content: inner } = block as Record<string, unknown>;
    if (typeof text === 'string') bytes += Buffer.byteLength(text);
    if (typeof thinking === 'string') bytes += Buffer.byteLength(thinking);
    if (input !== undefined) bytes += Buffer.byteLength(JSON.stringify(input));
    if (inner !== undefined) bytes += textBytes(inner);
  }
  return bytes;
}
