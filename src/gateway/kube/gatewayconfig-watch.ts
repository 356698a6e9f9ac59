/**
 * The watch of resource mode's one GatewayConfig object: a list/watch of its namespace's
 * GatewayConfigs narrowed to its name (list-watch.ts), told as the object's presence and content.
 */
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { CallFailure } from './api-calls.js';
import { ListWatch, type WatchVerb } from './list-watch.js';
import { GROUP, PLURAL, VERSION, type GatewayConfigObject, type ObjectReference } from './resource.js';

export type { WatchVerb } from './list-watch.js';

export type WatchState =
  /** Watched, and the object exists. */
  | { readonly state: 'up' }
  /** Watched, and there is no such object. */
  | { readonly state: 'missing' }
  /** The API server did not answer, or refused. */
  | { readonly state: 'failing'; readonly verb: WatchVerb; readonly failure: CallFailure };

export interface WatchHandlers {
  /** The object as it is now (undefined: there is none); called on every event, also unchanged ones. */
  object(object: GatewayConfigObject | undefined): void;
  /** Called on every transition, and on every failure (the caller tells repeats apart). */
  state(state: WatchState): void;
  /** A handler threw: a bug, reported here instead of being lost in the client's stream. */
  error(error: unknown): void;
}

export class GatewayConfigWatch {
  private readonly watch: ListWatch<GatewayConfigObject>;
  private exists = false;

  constructor(kubeConfig: KubeConfig, reference: ObjectReference, handlers: WatchHandlers) {
    const api = kubeConfig.makeApiClient(CustomObjectsApi);
    const fieldSelector = `metadata.name=${reference.name}`;
    const named = (object: GatewayConfigObject): boolean => object.metadata?.name === reference.name;
    this.watch = new ListWatch<GatewayConfigObject>(
      kubeConfig,
      {
        path: `/apis/${GROUP}/${VERSION}/namespaces/${reference.namespace}/${PLURAL}`,
        selector: { fieldSelector },
        list: async (options) =>
          (await api.listNamespacedCustomObject(
            { group: GROUP, version: VERSION, namespace: reference.namespace, plural: PLURAL, fieldSelector },
            options,
          )) as { metadata?: { resourceVersion?: string }; items?: GatewayConfigObject[] },
      },
      {
        listed: (objects) => {
          const object = objects.find(named);
          this.exists = object !== undefined;
          handlers.object(object);
        },
        answered: () => handlers.state({ state: this.exists ? 'up' : 'missing' }),
        changed: (type, object) => {
          if (!named(object)) return;
          if (type === 'DELETED') {
            this.exists = false;
            handlers.object(undefined);
            handlers.state({ state: 'missing' });
            return;
          }
          const appeared = !this.exists;
          this.exists = true;
          handlers.object(object);
          if (appeared) handlers.state({ state: 'up' });
        },
        failing: (verb, failure) => handlers.state({ state: 'failing', verb, failure }),
        error: handlers.error,
      },
    );
  }

  start(): void {
    this.watch.start();
  }

  stop(): void {
    this.watch.stop();
  }
}
