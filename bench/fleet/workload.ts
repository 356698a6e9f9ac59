/**
 * The fleet benchmark's workload, shaped like coding agents: tenants with a long system prompt of
 * their own, and conversations over it that grow by one user message and one answer per turn, with
 * think time (tool execution) between turns. Everything is drawn from a seeded generator, so two
 * runs send the same prompts.
 */
import { seededRandom } from '../support/random.ts';

export interface WorkloadShape {
  /** Tenants, each with its own system prompt shared by all its conversations. */
  tenants: number;
  /** Length of a tenant's system prompt, in the simulator's tokens (four characters each). */
  systemTokens: number;
  /** Turns of a conversation, drawn uniformly from this range (inclusive). */
  turns: readonly [number, number];
  /** Length of a turn's user message (a request, or a tool's output), in tokens. */
  userTokens: readonly [number, number];
  /** `max_tokens` of a turn, drawn uniformly from this range. */
  answerTokens: readonly [number, number];
  /** Mean think time between an answer and the next turn (exponential, capped at four times it). */
  thinkMeanMs: number;
}

export const AGENT_WORKLOAD: WorkloadShape = {
  tenants: 8,
  systemTokens: 1500,
  turns: [10, 40],
  userTokens: [50, 1000],
  answerTokens: [16, 96],
  thinkMeanMs: 800,
};

export function meanTurns(shape: WorkloadShape): number {
  return (shape.turns[0] + shape.turns[1]) / 2;
}

const SYLLABLES = [
  'ka',
  'lo',
  'mi',
  'ne',
  'ru',
  'sa',
  'ti',
  'vo',
  'za',
  'pe',
  'qu',
  'dy',
  'fo',
  'gi',
  'ha',
  'ju',
];

/** Text of about `tokens` simulator tokens (four characters each): words of random syllables. */
export function text(random: () => number, tokens: number): string {
  const chars = tokens * 4;
  let out = '';
  while (out.length < chars) {
    const syllables = 1 + Math.floor(random() * 4);
    for (let i = 0; i < syllables; i++) out += SYLLABLES[Math.floor(random() * SYLLABLES.length)];
    out += ' ';
  }
  return out.slice(0, chars);
}

const between = (random: () => number, [low, high]: readonly [number, number]): number =>
  low + Math.floor(random() * (high - low + 1));

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** One agent session: its history so far and how many turns it has left. */
export class Conversation {
  readonly messages: ChatMessage[];
  private turnsLeft: number;
  private readonly shape: WorkloadShape;
  private readonly random: () => number;

  constructor(shape: WorkloadShape, random: () => number, systemPrompt: string, turns: number) {
    this.shape = shape;
    this.random = random;
    this.messages = [{ role: 'system', content: systemPrompt }];
    this.turnsLeft = turns;
  }

  get done(): boolean {
    return this.turnsLeft === 0;
  }

  /** The next turn's request body, its user message appended to the history. */
  nextRequest(model: string): string {
    this.messages.push({
      role: 'user',
      content: text(this.random, between(this.random, this.shape.userTokens)),
    });
    this.turnsLeft--;
    return JSON.stringify({
      model,
      stream: true,
      max_tokens: between(this.random, this.shape.answerTokens),
      messages: this.messages,
    });
  }

  /** Records the answer the turn got, so the next turn carries it as the model's message. */
  answered(content: string): void {
    this.messages.push({ role: 'assistant', content });
  }

  /** Think time before the next turn. */
  thinkMs(): number {
    const mean = this.shape.thinkMeanMs;
    return Math.min(4 * mean, -Math.log(1 - this.random()) * mean);
  }
}

/** Makes conversations: fresh ones, and ones already under way for a run that starts in steady state. */
export class ConversationSource {
  private readonly shape: WorkloadShape;
  private readonly random: () => number;
  private readonly systemPrompts: string[];

  constructor(shape: WorkloadShape, seed: number) {
    this.shape = shape;
    this.random = seededRandom(seed);
    const promptRandom = seededRandom(seed ^ 0x5eed);
    this.systemPrompts = Array.from(
      { length: shape.tenants },
      (_, tenant) =>
        `You are the coding agent of tenant ${tenant}. ${text(promptRandom, shape.systemTokens)}`,
    );
  }

  /** A conversation at its first turn, for a tenant drawn uniformly. */
  fresh(): Conversation {
    const tenant = Math.floor(this.random() * this.shape.tenants);
    return new Conversation(
      this.shape,
      this.random,
      this.systemPrompts[tenant]!,
      between(this.random, this.shape.turns),
    );
  }

  /**
   * A conversation seen at a random moment of a steady state: its length drawn in proportion to
   * itself (a long conversation is more likely to be under way), its position uniform within it, and
   * the turns before that made up (no replica has them cached, as after a restart of the fleet).
   */
  underWay(): Conversation {
    const [low, high] = this.shape.turns;
    const total = Math.sqrt(low * low + this.random() * (high * high - low * low));
    const length = Math.max(low, Math.min(high, Math.round(total)));
    const done = Math.floor(this.random() * length);
    const tenant = Math.floor(this.random() * this.shape.tenants);
    const conversation = new Conversation(
      this.shape,
      this.random,
      this.systemPrompts[tenant]!,
      length - done,
    );
    for (let turn = 0; turn < done; turn++) {
      conversation.messages.push({
        role: 'user',
        content: text(this.random, between(this.random, this.shape.userTokens)),
      });
      conversation.messages.push({
        role: 'assistant',
        content: text(this.random, between(this.random, this.shape.answerTokens)),
      });
    }
    return conversation;
  }
}
