import type { TokenPrices } from '../runtime/table.js';
import type { TokenUsage } from './usage.js';

/**
 * What the committed attempt served, for the finished request's metrics and access line: made when
 * the attempt commits, completed when the provider's body ends or breaks.
 */
export class ServedRecord {
  /** The provider's name (the `provider` label). */
  readonly provider: string;
  /** Its token prices, if it has any. */
  readonly pricing: TokenPrices | undefined;
  /** When the attempt started (`performance.now()`). */
  readonly startedAt: number;
  /** When the provider's body ended or broke; 0 while it flows. */
  endedAt = 0;
  /** When the first data frame of a streamed response arrived, if one did. */
  firstTokenAt: number | undefined;
  /** The token usage the provider reported, if it did. */
  usage: TokenUsage | undefined;

  constructor(provider: string, pricing: TokenPrices | undefined, startedAt: number) {
    this.provider = provider;
    this.pricing = pricing;
    this.startedAt = startedAt;
  }

  /** The body ended or broke now, with what its reader saw by then. */
  bodyDone(firstTokenAt: number | undefined, usage: TokenUsage | undefined): void {
    this.endedAt = performance.now();
    this.firstTokenAt = firstTokenAt;
    this.usage = usage;
  }
}
