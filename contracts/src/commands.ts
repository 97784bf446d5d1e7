/**
 * Project commands: what an operator asks for. Decided against the project's
 * state by the control plane's pure decider into events.
 */
import type { KeyKind, StoredKey } from './events';

interface Command<T extends string, D> {
  type: T;
  data: D;
}

export type CreateProject = Command<'CreateProject', {
  projectId: string;
  name: string;
  teamId: string;
  keys: Record<KeyKind, StoredKey>;
}>;
export type DeleteProject = Command<'DeleteProject', { projectId: string }>;
export type RotateApiKey = Command<'RotateApiKey', { projectId: string; kind: KeyKind; key: StoredKey }>;
export type PingProject = Command<'PingProject', { projectId: string }>;

export type ProjectCommand = CreateProject | DeleteProject | RotateApiKey | PingProject;
