import type { ProviderRoute, TokenPrices } from '../runtime/table.js';
import type { TokenUsage } from './usage.js';

/**
 * What the committed attempt served, for the finished request's metrics and access line: made when
 * the attempt commits, completed when the provider's body ends or breaks.
 */
export class ServedRecord {
  /** The provider's entry (the `provider` label). */
  readonly provider: string;
  /** The provider itself: the entry, or `<entry>/<pod>` for a pod of a Service (the access log's `provider`). */
  readonly member: string;
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

  constructor(provider: Pick<ProviderRoute, 'label' | 'name' | 'pricing'>, startedAt: number) {
    this.provider = provider.label;
    this.member = provider.name;
    this.pricing = provider.pricing;
    this.startedAt = startedAt;
  }

  /** The body ended or broke now, with what its reader saw by then. */
  bodyDone(firstTokenAt: number | undefined, usage: TokenUsage | undefined): void {
    this.endedAt = performance.now();
    this.firstTokenAt = firstTokenAt;
    this.usage = usage;
  }
}
