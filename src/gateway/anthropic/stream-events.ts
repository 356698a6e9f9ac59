import type { MessagesUsage, StopOutcome } from './outcome.js';

/**
 * The SSE text of each Messages stream event, written directly as strings (one `JSON.stringify` per
 * dynamic string, none per event object): the stream translation emits one of these per upstream
 * delta. `model` is passed already JSON-encoded, since it is the same for a whole stream.
 */

export function messageStartEvent(id: string, modelJson: string): string {
  return `event: message_start\ndata: {"type":"message_start","message":{"id":${JSON.stringify(id)},"type":"message","role":"assistant","model":${modelJson},"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}\n\n`;
}

export function thinkingStartEvent(index: number): string {
  return `event: content_block_start\ndata: {"type":"content_block_start","index":${index},"content_block":{"type":"thinking","thinking":"","signature":""}}\n\n`;
}

export function textStartEvent(index: number): string {
  return `event: content_block_start\ndata: {"type":"content_block_start","index":${index},"content_block":{"type":"text","text":""}}\n\n`;
}

export function toolUseStartEvent(index: number, id: string, name: string): string {
  return `event: content_block_start\ndata: {"type":"content_block_start","index":${index},"content_block":{"type":"tool_use","id":${JSON.stringify(id)},"name":${JSON.stringify(name)},"input":{}}}\n\n`;
}

export function thinkingDeltaEvent(index: number, thinking: string): string {
  return `event: content_block_delta\ndata: {"type":"content_block_delta","index":${index},"delta":{"type":"thinking_delta","thinking":${JSON.stringify(thinking)}}}\n\n`;
}

export function signatureDeltaEvent(index: number, signature: string): string {
  return `event: content_block_delta\ndata: {"type":"content_block_delta","index":${index},"delta":{"type":"signature_delta","signature":${JSON.stringify(signature)}}}\n\n`;
}

export function textDeltaEvent(index: number, text: string): string {
  return `event: content_block_delta\ndata: {"type":"content_block_delta","index":${index},"delta":{"type":"text_delta","text":${JSON.stringify(text)}}}\n\n`;
}

export function inputJsonDeltaEvent(index: number, partialJson: string): string {
  return `event: content_block_delta\ndata: {"type":"content_block_delta","index":${index},"delta":{"type":"input_json_delta","partial_json":${JSON.stringify(partialJson)}}}\n\n`;
}

export function blockStopEvent(index: number): string {
  return `event: content_block_stop\ndata: {"type":"content_block_stop","index":${index}}\n\n`;
}

export function messageDeltaEvent(stop: StopOutcome, usage: MessagesUsage): string {
  return `event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"${stop.stopReason}","stop_sequence":${JSON.stringify(stop.stopSequence)}},"usage":{"input_tokens":${usage.input_tokens},"output_tokens":${usage.output_tokens},"cache_read_input_tokens":${usage.cache_read_input_tokens},"cache_creation_input_tokens":${usage.cache_creation_input_tokens}}}\n\n`;
}

export const MESSAGE_STOP_EVENT = 'event: message_stop\ndata: {"type":"message_stop"}\n\n';
