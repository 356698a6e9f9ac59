/** The GatewayConfig custom resource as resource mode reads and writes it. */
export {
  CRD_GROUP as GROUP,
  CRD_KIND as KIND,
  /** `gatewayconfigs.llm-gateway.dev`: the resource as RBAC rules and log lines name it. */
  CRD_NAME as RESOURCE,
  CRD_PLURAL as PLURAL,
  CRD_VERSION as VERSION,
} from '../config/crd.js';

/** A standard status condition (metav1.Condition). */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  observedGeneration?: number;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

/** What one replica says about the object; each replica writes its own entry. */
export interface ReplicaEntry {
  /** The pod's name: the entry's key. */
  pod: string;
  /** The latest generation this replica checked. */
  observedGeneration?: number;
  /** Its verdict on `observedGeneration`. */
  accepted?: boolean;
  /** Why it refused `observedGeneration`: the fields and the rules. */
  message?: string;
  /** The generation it serves; absent while it serves none. */
  servedGeneration?: number;
  /** Renewed while the replica runs: an entry not renewed for a while belongs to a pod that is gone. */
  heartbeatTime: string;
}

export interface GatewayConfigStatus {
  observedGeneration?: number;
  /** `n/m`: replicas serving the current generation, of the replicas that report. */
  serving?: string;
  conditions?: Condition[];
  replicas?: ReplicaEntry[];
}

export interface GatewayConfigObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    generation: number;
    resourceVersion: string;
  };
  spec?: unknown;
  status?: GatewayConfigStatus;
}

/** The object reference of resource mode. */
export interface ObjectReference {
  readonly namespace: string;
  readonly name: string;
}
