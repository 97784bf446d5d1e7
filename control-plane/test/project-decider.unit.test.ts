/** given(events).when(command).then(events | error) for the project aggregate. */
import { describe, expect, it } from 'vitest';
import { ApiError, type ProjectCommand, type ProjectEvent } from '@baseplane/contracts';
import { decide, evolve, initialState } from '../src/domain/project';

const projectId = '11111111-2222-4333-8444-555555555555';
const keys = { anon: { hash: 'a', cipher: 'ca' }, service: { hash: 's', cipher: 'cs' } };
const signingKey = { kid: 'k1', publicJwk: { kty: 'EC', kid: 'k1' }, privateJwkCipher: 'sealed' };
const signingKeyIssued: ProjectEvent = { type: 'SigningKeyIssued', data: { projectId, key: signingKey } };
const created: ProjectEvent = {
  type: 'ProjectCreated',
  data: { projectId, name: 'p', teamId: 't', keys, databaseName: 'p_11111111222243338444555555555555', ownerRole: 'p_11111111222243338444555555555555_owner' },
};
const provisioned: ProjectEvent = { type: 'ProjectProvisioned', data: { projectId, causationVersion: 1 } };
const deletionRequested: ProjectEvent = { type: 'ProjectDeletionRequested', data: { projectId } };
const deleted: ProjectEvent = { type: 'ProjectDeleted', data: { projectId, causationVersion: 3 } };

function given(...events: ProjectEvent[]) {
  const state = events.reduce(evolve, initialState());
  return {
    when: (command: ProjectCommand) => ({
      then: (expected: ProjectEvent[]) => expect(decide(command, state)).toEqual(expected),
      thenFails: (status: number, code: string) => {
        let error: unknown;
        try {
          decide(command, state);
        } catch (e) {
          error = e;
        }
        expect(error).toBeInstanceOf(ApiError);
        expect((error as ApiError).status).toBe(status);
        expect((error as ApiError).code).toBe(code);
      },
    }),
  };
}

const create: ProjectCommand = { type: 'CreateProject', data: { projectId, name: 'p', teamId: 't', keys, signingKey } };

describe('project decider', () => {
  it('creates a project that does not exist, naming its database and owner role, with its signing key', () => {
    given().when(create).then([created, signingKeyIssued]);
  });

  it('refuses to create a project twice', () => {
    given(created).when(create).thenFails(409, 'already_exists');
  });

  it('requests deletion of a live project, even while provisioning', () => {
    given(created).when({ type: 'DeleteProject', data: { projectId } }).then([deletionRequested]);
    given(created, provisioned).when({ type: 'DeleteProject', data: { projectId } }).then([deletionRequested]);
  });

  it('treats a deleted or unknown project as not found', () => {
    given().when({ type: 'DeleteProject', data: { projectId } }).thenFails(404, 'not_found');
    given(created, provisioned, deletionRequested, deleted).when({ type: 'DeleteProject', data: { projectId } }).thenFails(404, 'not_found');
    given(created, provisioned, deletionRequested, deleted)
      .when({ type: 'RotateApiKey', data: { projectId, kind: 'anon', key: { hash: 'n', cipher: 'cn' } } })
      .thenFails(404, 'not_found');
  });

  it('refuses commands while the project is being deleted: 503 project_unavailable, saying so', () => {
    const deleting = given(created, provisioned, deletionRequested);
    const commands: ProjectCommand[] = [
      { type: 'PingProject', data: { projectId } },
      { type: 'RotateApiKey', data: { projectId, kind: 'anon', key: { hash: 'n', cipher: 'cn' } } },
      { type: 'UpdateAuthSettings', data: { projectId, changes: { otpTtl: 300 } } },
    ];
    for (const command of commands) {
      deleting.when(command).thenFails(503, 'project_unavailable');
      expect(() => decide(command, [created, provisioned, deletionRequested].reduce(evolve, initialState()))).toThrow('project is being deleted');
    }
  });

  it('records nothing for a second deletion while one is under way (the caller follows that one)', () => {
    given(created, provisioned, deletionRequested).when({ type: 'DeleteProject', data: { projectId } }).then([]);
  });

  it('rotates a key of a live project', () => {
    const key = { hash: 'n', cipher: 'cn' };
    given(created, provisioned)
      .when({ type: 'RotateApiKey', data: { projectId, kind: 'service', key } })
      .then([{ type: 'ApiKeyRotated', data: { projectId, kind: 'service', key } }]);
  });

  it('pings only an active project', () => {
    given(created).when({ type: 'PingProject', data: { projectId } }).thenFails(503, 'project_unavailable');
    given(created, provisioned).when({ type: 'PingProject', data: { projectId } }).then([{ type: 'ProjectPinged', data: { projectId } }]);
  });

  it('folds status through provisioning, failure and deletion', () => {
    expect([created].reduce(evolve, initialState()).status).toBe('provisioning');
    expect([created, provisioned].reduce(evolve, initialState()).status).toBe('active');
    const failed: ProjectEvent = { type: 'ProjectProvisioningFailed', data: { projectId, causationVersion: 1, reason: 'x' } };
    expect([created, failed].reduce(evolve, initialState()).status).toBe('failed');
    expect([created, provisioned, deletionRequested, deleted].reduce(evolve, initialState()).status).toBe('deleted');
  });

  it('records only the auth settings that change, and folds them', () => {
    const update = (changes: object): ProjectCommand => ({ type: 'UpdateAuthSettings', data: { projectId, changes } });
    given(created, provisioned)
      .when(update({ requireEmailVerification: true, allowSignups: true, otpTtl: 300 }))
      .then([{ type: 'AuthSettingsUpdated', data: { projectId, changes: { requireEmailVerification: true, otpTtl: 300 } } }]);
    const updated: ProjectEvent = { type: 'AuthSettingsUpdated', data: { projectId, changes: { otpTtl: 300 } } };
    given(created, provisioned, updated).when(update({ otpTtl: 300 })).then([]);
    expect([created, provisioned, updated].reduce(evolve, initialState()).authSettings).toMatchObject({ otpTtl: 300, accessTokenTtl: 3600 });
    given().when(update({ otpTtl: 300 })).thenFails(404, 'not_found');
  });

  it('records only the rest settings that change, and folds them', () => {
    const update = (changes: object): ProjectCommand => ({ type: 'UpdateRestSettings', data: { projectId, changes } });
    given(created, provisioned)
      .when(update({ exposedSchemas: ['public', 'api'] }))
      .then([{ type: 'RestSettingsUpdated', data: { projectId, changes: { exposedSchemas: ['public', 'api'] } } }]);
    given(created, provisioned).when(update({ exposedSchemas: ['public'] })).then([]);
    const updated: ProjectEvent = { type: 'RestSettingsUpdated', data: { projectId, changes: { exposedSchemas: ['public', 'api'] } } };
    given(created, provisioned, updated).when(update({ exposedSchemas: ['public', 'api'] })).then([]);
    // The order is part of the value: the first schema is the default.
    given(created, provisioned, updated)
      .when(update({ exposedSchemas: ['api', 'public'] }))
      .then([{ type: 'RestSettingsUpdated', data: { projectId, changes: { exposedSchemas: ['api', 'public'] } } }]);
    expect(initialState().restSettings).toEqual({ exposedSchemas: ['public'], maxRows: null });
    expect([created, provisioned, updated].reduce(evolve, initialState()).restSettings).toEqual({ exposedSchemas: ['public', 'api'], maxRows: null });
    // A row cap alone is its own change; null (the platform's cap) when it is already null records nothing.
    given(created, provisioned, updated).when(update({ exposedSchemas: ['public', 'api'], maxRows: 10 })).then([{ type: 'RestSettingsUpdated', data: { projectId, changes: { maxRows: 10 } } }]);
    given(created, provisioned).when(update({ maxRows: null })).then([]);
    given(created, provisioned, deletionRequested).when(update({ exposedSchemas: ['api'] })).thenFails(503, 'project_unavailable');
    given(created, provisioned, deletionRequested, deleted).when(update({ exposedSchemas: ['api'] })).thenFails(404, 'not_found');
    given().when(update({ exposedSchemas: ['api'] })).thenFails(404, 'not_found');
  });
});
