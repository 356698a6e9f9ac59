import { randomBytes } from 'node:crypto';

/** The Messages id of a chat completion: `msg_` + its id, or a random one when it has none. */
export function messageId(chatId: unknown): string {
  return typeof chatId === 'string' && chatId.length > 0 ? `msg_${chatId}` : `msg_${randomHex()}`;
}

/** An id for a tool call the provider sent without one (the client answers it by this id). */
export function generatedToolUseId(): string {
  return `toolu_${randomHex()}`;
}

function randomHex(): string {
  return randomBytes(12).toString('hex');
}
