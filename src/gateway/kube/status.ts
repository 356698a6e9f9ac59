/**
 * Status of the GatewayConfig object, written by the replicas that serve it, without write conflicts
 * or flapping:
 *
 * - Each replica owns one entry of `status.replicas` (keyed by its pod name) and writes only that
 *   entry, with server-side apply under a field manager of its own: no two replicas ever write the
 *   same field, so they never conflict and need no retries. It writes when what it has to say
 *   changes (it checked a generation, accepted or refused it, serves it) and renews a heartbeat in it.
 * - The object-wide fields (`observedGeneration`, `serving`, the `Accepted` and `Ready` conditions)
 *   are computed from the live entries by one replica, the holder of a coordination.k8s.io Lease,
 *   and written only when they change. One writer means no two replicas with different views
 *   overwrite each other back and forth; the Lease hands the job over when its holder goes.
 * - The holder also removes the entries whose heartbeat stopped (their pods are gone), so a gone
 *   pod stops counting within the staleness limit; a replica that shuts down withdraws its own.
 *   After an outage of the API server every heartbeat is old: entries are judged again only once
 *   the holder has reached the API server for a whole staleness limit, time for the others to renew.
 */
import { createHash } from 'node:crypto';
import { CustomObjectsApi, PatchStrategy, type KubeConfig } from '@kubernetes/client-node';
import { callOptions, describeFailure } from './api-calls.js';
import type { CallHealth } from './call-health.js';
import { LeaseElection } from './lease.js';
import {
  GROUP,
  KIND,
  PLURAL,
  RESOURCE,
  VERSION,
  type GatewayConfigObject,
  type ObjectReference,
  type ReplicaEntry,
} from './resource.js';
import { statusMatches, summarize } from './status-summary.js';

const STATUS_RESOURCE = `${RESOURCE}/status`;
const LEASE_RESOURCE = 'leases.coordination.k8s.io';
/** Field manager of the object-wide fields: the same for every holder, so a new one takes over cleanly. */
const SUMMARY_FIELD_MANAGER = 'llm-gateway-status';
const CONSEQUENCE = 'the status is not updated meanwhile; serving is not affected';

interface StatusTiming {
  /** How often the reporter wakes: Lease renewal, heartbeat due, holder's duties. */
  tickMs: number;
  /** How often a replica renews its entry's heartbeat. */
  heartbeatMs: number;
  /** An entry whose heartbeat is older than this belongs to a pod that is gone. */
  staleMs: number;
  leaseSeconds: number;
  callDeadlineMs: number;
  /** What withdrawing the entry and the Lease may take at shutdown, at most. */
  stopMs: number;
}

/** A gone pod stops counting within staleMs + tickMs (50 s). */
const STATUS_TIMING: StatusTiming = {
  tickMs: 5000,
  heartbeatMs: 15_000,
  staleMs: 45_000,
  leaseSeconds: 15,
  callDeadlineMs: 10_000,
  stopMs: 2000,
};

/** The field manager of one replica's entry (at most 128 characters, as the API requires). */
function replicaFieldManager(pod: string): string {
  return `llm-gateway/${pod}`.slice(0, 128);
}

/**
 * The Lease through which the replicas of one GatewayConfig elect the status writer (the chart's
 * Role names it). A name too long for `gatewayconfig-<name>-status` uses a digest of it instead.
 */
export function statusLeaseName(name: string): string {
  const full = `gatewayconfig-${name}-status`;
  if (full.length <= 253) return full;
  return `gatewayconfig-${createHash('sha256').update(name).digest('hex').slice(0, 32)}-status`;
}

export type ReplicaReport = Omit<ReplicaEntry, 'pod' | 'heartbeatTime'>;

export interface StatusReporterOptions {
  kubeConfig: KubeConfig;
  reference: ObjectReference;
  /** This replica's pod name: its entry's key. */
  pod: string;
  health: CallHealth;
  /** A bug in the reporter's own work: reported, and the next tick tries again. */
  onError: (error: unknown) => void;
}

const bounded = (work: Promise<unknown>, ms: number): Promise<unknown> =>
  Promise.race([work, new Promise((resolve) => setTimeout(resolve, ms).unref())]);

export class StatusReporter {
  private readonly api: CustomObjectsApi;
  private readonly election: LeaseElection;
  private readonly options: StatusReporterOptions & { timing: StatusTiming };
  private object: GatewayConfigObject | undefined;
  private report: ReplicaReport = {};
  /** The uid of the object the entry was last written to, and when. */
  private writtenTo: string | undefined;
  private writtenAt = 0;
  private dirty = false;
  private queued = false;
  private tickDue = false;
  private chain: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Since when the status writes have succeeded without a failure in between (0: failing). */
  private reachableSince = 0;
  /** A status write has failed since the process started (the API server went away, say). */
  private hasFailed = false;

  constructor(options: StatusReporterOptions) {
    this.options = { ...options, timing: STATUS_TIMING };
    this.api = options.kubeConfig.makeApiClient(CustomObjectsApi);
    this.election = new LeaseElection(options.kubeConfig, {
      namespace: options.reference.namespace,
      name: statusLeaseName(options.reference.name),
      identity: options.pod,
      durationSeconds: this.options.timing.leaseSeconds,
      callDeadlineMs: this.options.timing.callDeadlineMs,
    });
  }

  start(): void {
    this.timer = setInterval(() => this.schedule(true), this.options.timing.tickMs);
    this.timer.unref();
    this.schedule(true);
  }

  /** The object as the watch saw it last (undefined: deleted). */
  observe(object: GatewayConfigObject | undefined): void {
    this.object = object;
    if (object !== undefined && object.metadata.uid !== this.writtenTo) this.dirty = true;
    this.schedule(false);
  }

  /** What this replica now says about the object: written at once. */
  update(report: ReplicaReport): void {
    this.report = report;
    this.dirty = true;
    this.schedule(false);
  }

  /**
   * Withdraws this replica's entry and gives up the Lease, within `stopMs` whatever the API server
   * does: a shutdown must not wait on it. The write in flight is let finish first, briefly, so a late
   * heartbeat cannot put the entry back.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.timer);
    const { stopMs } = this.options.timing;
    await bounded(this.chain, stopMs / 2);
    await bounded(Promise.allSettled([this.withdrawEntry(stopMs / 2), this.election.release()]), stopMs / 2);
  }

  /** Runs the reporter's work once at a time; calls made meanwhile coalesce into one more run. */
  private schedule(tick: boolean): void {
    this.tickDue ||= tick;
    if (this.queued || this.stopped) return;
    this.queued = true;
    this.chain = this.chain
      .then(async () => {
        this.queued = false;
        const tickNow = this.tickDue;
        this.tickDue = false;
        await this.sync(tickNow);
      })
      .catch((error: unknown) => this.options.onError(error));
  }

  private async sync(tick: boolean): Promise<void> {
    if (this.stopped) return;
    if (tick)
      try {
        await this.election.tick();
        this.options.health.succeeded('update', LEASE_RESOURCE);
      } catch (error) {
        this.options.health.failed('update', LEASE_RESOURCE, describeFailure(error), CONSEQUENCE);
      }
    const object = this.object;
    if (object === undefined || this.stopped) return;
    const now = Date.now();
    if (this.dirty || now - this.writtenAt >= this.options.timing.heartbeatMs)
      await this.writeEntry(object, now);
    if (this.election.leader && !this.stopped) await this.writeSummary(object, now);
  }

  private async writeEntry(object: GatewayConfigObject, now: number): Promise<void> {
    const entry: ReplicaEntry = {
      pod: this.options.pod,
      ...this.report,
      heartbeatTime: new Date(now).toISOString().replace(/\.\d+Z$/, 'Z'),
    };
    this.dirty = false;
    try {
      await this.apply(object, { replicas: [entry] }, replicaFieldManager(this.options.pod));
      this.writtenTo = object.metadata.uid;
      this.writtenAt = now;
      if (this.reachableSince === 0) this.reachableSince = now;
      this.options.health.succeeded('patch', STATUS_RESOURCE);
    } catch (error) {
      this.dirty = true;
      this.reachableSince = 0;
      this.hasFailed = true;
      this.options.health.failed('patch', STATUS_RESOURCE, describeFailure(error), CONSEQUENCE);
    }
  }

  private async writeSummary(object: GatewayConfigObject, now: number): Promise<void> {
    if (this.reachableSince === 0) return;
    const { staleMs } = this.options.timing;
    const judged = !this.hasFailed || now - this.reachableSince >= staleMs;
    const summary = summarize(object, now, judged ? staleMs : Number.POSITIVE_INFINITY);
    try {
      if (!statusMatches(object, summary))
        await this.apply(
          object,
          {
            ...(summary.observedGeneration === undefined
              ? {}
              : { observedGeneration: summary.observedGeneration }),
            serving: summary.serving,
            conditions: summary.conditions,
          },
          SUMMARY_FIELD_MANAGER,
        );
      if (summary.stale.length > 0)
        await this.removeStale(
          object,
          summary.stale.map((e) => e.pod),
        );
      this.options.health.succeeded('patch', STATUS_RESOURCE);
    } catch (error) {
      this.options.health.failed('patch', STATUS_RESOURCE, describeFailure(error), CONSEQUENCE);
    }
  }

  /**
   * Server-side apply of part of the status, forced: each field has exactly one manager anyway. The
   * uid makes it fail on an object recreated under the same name meanwhile.
   */
  private apply(
    object: GatewayConfigObject,
    status: object,
    fieldManager: string,
    deadlineMs = this.options.timing.callDeadlineMs,
  ): Promise<unknown> {
    const body = {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: KIND,
      metadata: { name: object.metadata.name, uid: object.metadata.uid },
      status,
    };
    return this.patchStatus(body, PatchStrategy.ServerSideApply, deadlineMs, { fieldManager, force: true });
  }

  /** One patch of the status subresource, aborted after its deadline. */
  private patchStatus(
    body: unknown,
    strategy: PatchStrategy,
    deadlineMs: number,
    apply: { fieldManager?: string; force?: boolean } = {},
  ): Promise<unknown> {
    const { namespace, name } = this.options.reference;
    return this.api.patchNamespacedCustomObjectStatus(
      { group: GROUP, version: VERSION, namespace, plural: PLURAL, name, body, ...apply },
      callOptions(deadlineMs, strategy),
    );
  }

  /**
   * Removes the entries of gone pods (written by other managers, so an apply cannot) with one JSON
   * patch: each removal is preceded by a test of the pod name at that index, so an entry that moved
   * meanwhile makes the patch fail, never removes another replica's entry. Indexes descend, so a
   * removal does not move the next one.
   */
  private async removeStale(object: GatewayConfigObject, pods: readonly string[]): Promise<void> {
    const entries = object.status?.replicas ?? [];
    const operations: object[] = [];
    for (let index = entries.length - 1; index >= 0; index--) {
      const pod = entries[index]!.pod;
      if (!pods.includes(pod)) continue;
      operations.push(
        { op: 'test', path: `/status/replicas/${index}/pod`, value: pod },
        { op: 'remove', path: `/status/replicas/${index}` },
      );
    }
    if (operations.length === 0) return;
    try {
      await this.patchStatus(operations, PatchStrategy.JsonPatch, this.options.timing.callDeadlineMs);
    } catch (error) {
      // A failed test (422) means the list moved: the next pass removes them from a fresh view.
      if (describeFailure(error).status !== 422) throw error;
    }
  }

  /**
   * Withdraws this replica's entry: an apply of nothing under its own field manager gives up every
   * field it owned, the entry with them (no other manager owns any of it).
   */
  private async withdrawEntry(deadlineMs: number): Promise<void> {
    const object = this.object;
    if (object === undefined || this.writtenTo !== object.metadata.uid) return;
    try {
      await this.apply(object, {}, replicaFieldManager(this.options.pod), deadlineMs);
    } catch (error) {
      this.options.health.failed(
        'patch',
        STATUS_RESOURCE,
        describeFailure(error),
        'this replica entry stays until it goes stale',
      );
    }
  }
}
