/**
 * Offline validation of rendered objects against the Kubernetes OpenAPI schemas, with the
 * validators kubernetes-models compiles from them (a recent Kubernetes release), and of the
 * Prometheus Operator's objects against their CRDs' schemas (crd-validate.ts; their metadata
 * against ObjectMeta).
 *
 * Those validators check types, required fields and enums but, like the OpenAPI schemas, accept
 * unknown fields, which is how a misspelled key (`topologySpreadConstraint`) slips through. So the
 * data is wrapped in a proxy that records which properties the validator looked at: an own property
 * of an object that the validator read other properties of, but never this one, is unknown to the
 * schema (the `kubeconform -strict` rule). Maps (labels, annotations, ConfigMap data) are read by
 * enumeration, which marks all their keys as known.
 */
import { validate as validateConfigMap } from 'kubernetes-models/_schemas/IoK8sApiCoreV1ConfigMap';
import { validate as validatePod } from 'kubernetes-models/_schemas/IoK8sApiCoreV1Pod';
import { validate as validateSecret } from 'kubernetes-models/_schemas/IoK8sApiCoreV1Secret';
import { validate as validateService } from 'kubernetes-models/_schemas/IoK8sApiCoreV1Service';
import { validate as validateServiceAccount } from 'kubernetes-models/_schemas/IoK8sApiCoreV1ServiceAccount';
import { validate as validateDeployment } from 'kubernetes-models/_schemas/IoK8sApiAppsV1Deployment';
import { validate as validateHpa } from 'kubernetes-models/_schemas/IoK8sApiAutoscalingV2HorizontalPodAutoscaler';
import { validate as validateNetworkPolicy } from 'kubernetes-models/_schemas/IoK8sApiNetworkingV1NetworkPolicy';
import { validate as validatePdb } from 'kubernetes-models/_schemas/IoK8sApiPolicyV1PodDisruptionBudget';
import { validate as validateRole } from 'kubernetes-models/_schemas/IoK8sApiRbacV1Role';
import { validate as validateRoleBinding } from 'kubernetes-models/_schemas/IoK8sApiRbacV1RoleBinding';
import { parseConfigValue } from '../../src/gateway/config/load.js';
import { validateCustomResource } from './crd-validate.ts';

interface AjvError {
  instancePath: string;
  message?: string;
  keyword: string;
  params: Record<string, unknown>;
}
type Validator = ((data: unknown) => boolean) & { errors?: AjvError[] | null };

const VALIDATORS: Record<string, Validator> = {
  'v1/ConfigMap': validateConfigMap as Validator,
  'v1/Pod': validatePod as Validator,
  'v1/Secret': validateSecret as Validator,
  'v1/Service': validateService as Validator,
  'v1/ServiceAccount': validateServiceAccount as Validator,
  'apps/v1/Deployment': validateDeployment as Validator,
  'autoscaling/v2/HorizontalPodAutoscaler': validateHpa as Validator,
  'networking.k8s.io/v1/NetworkPolicy': validateNetworkPolicy as Validator,
  'policy/v1/PodDisruptionBudget': validatePdb as Validator,
  'rbac.authorization.k8s.io/v1/Role': validateRole as Validator,
  'rbac.authorization.k8s.io/v1/RoleBinding': validateRoleBinding as Validator,
};

/** The gateway's own kind: its spec is checked by the gateway's configuration schema itself. */
const GATEWAY_CONFIG = 'llm-gateway.dev/v1alpha1/GatewayConfig';

/** Kinds outside the core API (Prometheus Operator CRDs): checked against the CRDs' schemas. */
export const CUSTOM_KINDS = new Set([
  'monitoring.coreos.com/v1/ServiceMonitor',
  'monitoring.coreos.com/v1/PodMonitor',
  'monitoring.coreos.com/v1/PrometheusRule',
]);

interface Access {
  read: Set<string>;
  enumerated: boolean;
}

/** Wraps `data` so every property read and key enumeration is recorded per object. */
function track(
  data: unknown,
  accesses: Map<object, Access>,
  paths: Map<object, string>,
  path: string,
): unknown {
  if (data === null || typeof data !== 'object') return data;
  const target = data;
  paths.set(target, path);
  const access: Access = { read: new Set(), enumerated: false };
  accesses.set(target, access);
  const children = new Map<PropertyKey, unknown>();
  return new Proxy(target, {
    get(obj, key, receiver) {
      if (typeof key === 'string') access.read.add(key);
      const value: unknown = Reflect.get(obj, key, receiver);
      if (value === null || typeof value !== 'object') return value;
      if (!children.has(key)) children.set(key, track(value, accesses, paths, `${path}/${String(key)}`));
      return children.get(key);
    },
    ownKeys(obj) {
      access.enumerated = true;
      return Reflect.ownKeys(obj);
    },
    has(obj, key) {
      if (typeof key === 'string') access.read.add(key);
      return Reflect.has(obj, key);
    },
  });
}

export interface ValidationProblem {
  path: string;
  message: string;
}

/** Schema violations, then unknown fields, of `data` against one compiled validator. */
function validateWith(validate: Validator, data: unknown): ValidationProblem[] {
  const accesses = new Map<object, Access>();
  const paths = new Map<object, string>();
  const copy: unknown = structuredClone(data);
  const ok = validate(track(copy, accesses, paths, ''));
  const problems: ValidationProblem[] = ok
    ? []
    : (validate.errors ?? []).map((e) => ({
        path: e.instancePath,
        message: `${e.message ?? e.keyword} ${JSON.stringify(e.params)}`,
      }));

  for (const [target, access] of accesses) {
    if (access.enumerated || Array.isArray(target) || access.read.size === 0) continue;
    for (const field of Object.keys(target)) {
      if (!access.read.has(field)) {
        problems.push({ path: `${paths.get(target) ?? ''}/${field}`, message: 'unknown field' });
      }
    }
  }
  return problems;
}

/**
 * Problems of one object: schema violations, then unknown fields. An unknown `apiVersion`/`kind`
 * is a problem too. CUSTOM_KINDS are checked against their CRD's openAPIV3Schema, their metadata
 * against ObjectMeta.
 */
export function validateObject(object: { apiVersion?: unknown; kind?: unknown }): ValidationProblem[] {
  const key = `${String(object.apiVersion)}/${String(object.kind)}`;
  if (CUSTOM_KINDS.has(key) || key === GATEWAY_CONFIG) {
    const { metadata, spec, ...rest } = object as { metadata?: unknown; spec?: unknown };
    // ObjectMeta through a ConfigMap that holds nothing else (kubernetes-models exports no
    // standalone ObjectMeta validator).
    const metadataProblems =
      metadata === undefined
        ? [{ path: '/metadata', message: 'required' }]
        : validateWith(validateConfigMap as Validator, { apiVersion: 'v1', kind: 'ConfigMap', metadata });
    if (key !== GATEWAY_CONFIG) return [...metadataProblems, ...validateCustomResource(object)];
    const parsed = parseConfigValue(spec, '');
    return [
      ...metadataProblems,
      ...Object.keys(rest)
        .filter((field) => field !== 'apiVersion' && field !== 'kind')
        .map((field) => ({ path: `/${field}`, message: 'unknown field' })),
      ...(parsed.ok
        ? []
        : parsed.issues.map((issue) => ({ path: `/spec${issue.path.slice(1)}`, message: issue.message }))),
    ];
  }
  const validate = VALIDATORS[key];
  if (!validate) return [{ path: '', message: `no schema for ${key}` }];
  return validateWith(validate, object);
}
