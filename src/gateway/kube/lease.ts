/**
 * Leader election through a coordination.k8s.io Lease, as client-go's leader election does it: the
 * holder renews the Lease well within its duration; another candidate takes it over only once it has
 * seen the same holder and renew time unchanged for a whole duration (measured on its own clock, so
 * clocks need not agree). Writes carry the resourceVersion read, so two candidates racing for it
 * cannot both win. A holder that cannot renew steps down by itself when its duration runs out.
 */
import { CoordinationV1Api, V1MicroTime, type KubeConfig, type V1Lease } from '@kubernetes/client-node';
import { callOptions, describeFailure } from './api-calls.js';

export interface LeaseOptions {
  readonly namespace: string;
  readonly name: string;
  /** This candidate's identity (its pod name). */
  readonly identity: string;
  readonly durationSeconds: number;
  /** Deadline of each call. */
  readonly callDeadlineMs: number;
}

export class LeaseElection {
  private readonly api: CoordinationV1Api;
  /** The holder and renew time last read, and when this candidate first saw them. */
  private observed: { holder: string; renew: string; since: number } | undefined;
  /** When this candidate last renewed the Lease it holds (0: it does not hold it). */
  private renewedAt = 0;
  private readonly options: LeaseOptions;

  constructor(kubeConfig: KubeConfig, options: LeaseOptions) {
    this.options = options;
    this.api = kubeConfig.makeApiClient(CoordinationV1Api);
  }

  /** True while this candidate holds the Lease and renewed it within its duration. */
  get leader(): boolean {
    return this.renewedAt > 0 && Date.now() - this.renewedAt < this.options.durationSeconds * 1000;
  }

  /** Acquires or renews the Lease once. Rejects with the API's error (the caller logs it). */
  async tick(): Promise<void> {
    const { namespace, name, identity, durationSeconds } = this.options;
    let lease: V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ name, namespace }, this.deadline());
    } catch (error) {
      if (describeFailure(error).kind !== 'not_found') throw error;
      await this.write(() =>
        this.api.createNamespacedLease(
          { namespace, body: { metadata: { name, namespace }, spec: this.spec(undefined) } },
          this.deadline(),
        ),
      );
      return;
    }
    const holder = lease.spec?.holderIdentity ?? '';
    const renew = String(lease.spec?.renewTime ?? '');
    const now = Date.now();
    if (this.observed?.holder !== holder || this.observed.renew !== renew)
      this.observed = { holder, renew, since: now };
    const expired = holder === '' || now - this.observed.since >= durationSeconds * 1000;
    if (holder !== identity && !expired) {
      this.renewedAt = 0;
      return;
    }
    await this.write(() =>
      this.api.replaceNamespacedLease(
        {
          name,
          namespace,
          body: {
            metadata: { name, namespace, resourceVersion: lease.metadata?.resourceVersion },
            spec: this.spec(lease),
          },
        },
        this.deadline(),
      ),
    );
  }

  /** Gives the Lease up (on shutdown), so another replica takes over at once. */
  async release(): Promise<void> {
    if (!this.leader) return;
    const { namespace, name } = this.options;
    this.renewedAt = 0;
    const lease = await this.api.readNamespacedLease({ name, namespace }, this.deadline());
    if (lease.spec?.holderIdentity !== this.options.identity) return;
    await this.api.replaceNamespacedLease(
      {
        name,
        namespace,
        body: {
          metadata: { name, namespace, resourceVersion: lease.metadata?.resourceVersion },
          spec: { ...lease.spec, holderIdentity: undefined, leaseDurationSeconds: 1 },
        },
      },
      this.deadline(),
    );
  }

  private spec(previous: V1Lease | undefined): NonNullable<V1Lease['spec']> {
    const now = new V1MicroTime();
    const held = previous?.spec?.holderIdentity === this.options.identity;
    const transitions = previous?.spec?.leaseTransitions ?? 0;
    return {
      holderIdentity: this.options.identity,
      leaseDurationSeconds: this.options.durationSeconds,
      acquireTime: held ? previous?.spec?.acquireTime : now,
      renewTime: now,
      leaseTransitions: previous === undefined ? 0 : held ? transitions : transitions + 1,
    };
  }

  /** A create or replace: success makes this candidate the holder; a conflict means another won. */
  private async write(call: () => Promise<V1Lease>): Promise<void> {
    try {
      const written = await call();
      this.renewedAt = Date.now();
      this.observed = {
        holder: this.options.identity,
        renew: String(written.spec?.renewTime ?? ''),
        since: this.renewedAt,
      };
    } catch (error) {
      const kind = describeFailure(error).kind;
      if (kind === 'conflict') {
        this.renewedAt = 0;
        return;
      }
      throw error;
    }
  }

  /** Each call aborts after the deadline. */
  private deadline() {
    return callOptions(this.options.callDeadlineMs);
  }
}
