/**
 * The object-wide status, computed from the replicas' own entries: whether the current generation is
 * accepted, how many replicas serve it, and which entries belong to pods that are gone. A pure
 * function of the object and the time, so the replica that writes it (the Lease holder) and a test
 * compute the same thing.
 */
import type { Condition, GatewayConfigObject, ReplicaEntry } from './resource.js';

/** Room for the fields and rules of a refusal, well under a condition message's limit (32 KiB). */
export const MAX_MESSAGE_CHARS = 4000;

export interface StatusSummary {
  /** The generation the conditions describe; undefined while no live replica has checked it. */
  readonly observedGeneration: number | undefined;
  readonly serving: string;
  readonly conditions: Condition[];
  /** Entries whose heartbeat is older than the staleness limit: their pods are gone. */
  readonly stale: ReplicaEntry[];
}

export function truncate(text: string, max = MAX_MESSAGE_CHARS): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function condition(
  previous: readonly Condition[] | undefined,
  now: string,
  generation: number,
  type: string,
  status: Condition['status'],
  reason: string,
  message: string,
): Condition {
  const before = previous?.find((c) => c.type === type);
  // The transition time moves only when the status does (the Kubernetes convention).
  const lastTransitionTime = before?.status === status ? before.lastTransitionTime : now;
  return {
    type,
    status,
    observedGeneration: generation,
    lastTransitionTime,
    reason,
    message: truncate(message),
  };
}

export function summarize(object: GatewayConfigObject, now: number, staleMs: number): StatusSummary {
  const generation = object.metadata.generation;
  const entries = object.status?.replicas ?? [];
  const isLive = (entry: ReplicaEntry): boolean => {
    const heartbeat = Date.parse(entry.heartbeatTime);
    return Number.isFinite(heartbeat) && now - heartbeat <= staleMs;
  };
  const live = entries.filter(isLive);
  const stale = entries.filter((entry) => !isLive(entry));
  const checked = live.filter((entry) => entry.observedGeneration === generation);
  const refusing = checked.filter((entry) => entry.accepted === false);
  const serving = live.filter((entry) => entry.servedGeneration === generation).length;
  const previous = object.status?.conditions;
  const nowText = new Date(now).toISOString();

  let accepted: Condition;
  if (refusing.length > 0) {
    const first = refusing[0]!;
    const who =
      refusing.length === 1
        ? `replica ${first.pod}`
        : `${refusing.length} of ${live.length} replicas (${refusing.map((r) => r.pod).join(', ')})`;
    accepted = condition(
      previous,
      nowText,
      generation,
      'Accepted',
      'False',
      'Invalid',
      `generation ${generation} refused by ${who}: ${first.message ?? 'no reason given'}`,
    );
  } else if (checked.length > 0)
    accepted = condition(
      previous,
      nowText,
      generation,
      'Accepted',
      'True',
      'Accepted',
      `generation ${generation} accepted by ${checked.length} of ${live.length} replicas`,
    );
  else
    accepted = condition(
      previous,
      nowText,
      generation,
      'Accepted',
      'Unknown',
      'Pending',
      `no replica has checked generation ${generation} yet`,
    );

  const allServe = live.length > 0 && serving === live.length;
  const ready = condition(
    previous,
    nowText,
    generation,
    'Ready',
    allServe ? 'True' : 'False',
    allServe ? 'AllReplicasServing' : live.length === 0 ? 'NoReplicas' : 'ReplicasNotServing',
    `${serving} of ${live.length} replicas serve generation ${generation}`,
  );
  return {
    observedGeneration: checked.length > 0 ? generation : object.status?.observedGeneration,
    serving: `${serving}/${live.length}`,
    conditions: [accepted, ready],
    stale,
  };
}

/** Whether the object's status already says what the summary says (timestamps aside). */
export function statusMatches(object: GatewayConfigObject, summary: StatusSummary): boolean {
  const status = object.status;
  if (status === undefined) return false;
  if (status.observedGeneration !== summary.observedGeneration || status.serving !== summary.serving)
    return false;
  return summary.conditions.every((want) => {
    const have = status.conditions?.find((c) => c.type === want.type);
    return (
      have !== undefined &&
      have.status === want.status &&
      have.reason === want.reason &&
      have.message === want.message &&
      have.observedGeneration === want.observedGeneration
    );
  });
}
