/**
 * The session keeper of two tabs whose copies of `localStorage` lag behind
 * each other's writes, as Chromium's do, refreshing against the real
 * stack. Chromium's lag cannot be steered from a test, so each tab's copy
 * here is a model: it shows another tab's writes only when the test says
 * they arrived. The ledger is kept in memory (the browser test runs the
 * IndexedDB one); the refreshes are real, and so is the server's verdict
 * on a refresh token spent twice (the session revoked).
 */
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { SessionKeeper } from '../src/auth/session-keeper';
import type { LedgerEntry, SessionLedger } from '../src/auth/session-ledger';
import type { SessionStorage } from '../src/auth/session-storage';
import { request, type Result } from '../src/result';
import type { SessionAnswer, User } from '../src/types';
import { appClient, clientProject, newEmail, PASSWORD, type ClientProject } from './client-fixtures';

const KEY = 'baseplane.auth.ledger-test';
let p: ClientProject;

beforeAll(async () => {
  p = await clientProject('session ledger');
});

/** One origin's `localStorage` as each tab sees it: a tab's writes land at once in its own copy, in the others' on `arrive`. */
function laggingLocalStorage() {
  let truth: string | null = null;
  const copies = new Map<string, string | null>();
  return {
    tab(name: string): SessionStorage {
      copies.set(name, truth);
      const write = (value: string | null) => {
        truth = value;
        copies.set(name, value);
      };
      return { getItem: () => copies.get(name) ?? null, setItem: (_key, value) => write(value), removeItem: () => write(null) };
    },
    /** Every write so far reaches `name`'s copy. */
    arrive(name: string) {
      copies.set(name, truth);
    },
  };
}

function memoryLedger(): SessionLedger {
  const entries = new Map<string, LedgerEntry>();
  return { read: async (key) => entries.get(key) ?? null, write: async (key, entry) => void entries.set(key, entry) };
}

/** POST /auth/refresh on the real data plane, with the tokens it spent. */
function refresher() {
  const spent: string[] = [];
  const callRefresh = (refreshToken: string) => {
    spent.push(refreshToken);
    const url = `${inject('baseUrl')}/rest/v1/auth/refresh`;
    return request<SessionAnswer>(fetch, { method: 'POST', url, headers: { apikey: p.project.anonKey }, body: { refreshToken } });
  };
  return { spent, callRefresh };
}

function keeper(storage: SessionStorage, ledger: SessionLedger | null, callRefresh: (token: string) => Promise<Result<SessionAnswer>>) {
  return new SessionKeeper({ storage, storageKey: KEY, followOtherTabs: false, ledger, autoRefresh: false, callRefresh });
}

/** A new user's sign-up answer, for a keeper to establish. */
async function signUp(): Promise<{ answer: SessionAnswer; user: User }> {
  const { data, error } = await appClient(p).auth.signUp({ email: newEmail('ledger'), password: PASSWORD });
  expect(error).toBeNull();
  return { answer: data!.session, user: data!.user };
}

/** Tab a signs a new user in; tab b opens once that has reached its copy of localStorage. */
async function twoTabs(ledger: SessionLedger | null) {
  const local = laggingLocalStorage();
  const { spent, callRefresh } = refresher();
  const a = keeper(local.tab('a'), ledger, callRefresh);
  await a.ready;
  const { answer, user } = await signUp();
  await a.establish(answer, user);
  local.arrive('b');
  const b = keeper(local.tab('b'), ledger, callRefresh);
  await b.ready;
  return { local, spent, a, b, answer };
}

describe('two tabs whose localStorage lags', () => {
  it('a tab that missed several refreshes of the other takes the newest session instead of spending an old token', async () => {
    const { local, spent, a, b, answer } = await twoTabs(memoryLedger());
    expect(b.current?.refreshToken).toBe(answer.refreshToken);

    // Three refreshes in tab a that tab b's copy has not heard of yet.
    for (let n = 0; n < 3; n++) expect((await a.refresh()).error).toBeNull();
    const newest = a.current!;
    const answered = await b.refresh();

    expect(answered).toEqual({ data: newest, error: null });
    expect(b.current).toEqual(newest);
    expect(spent).toHaveLength(3);
    // Nobody spent an old token: the session still refreshes, in either tab.
    expect((await a.refresh()).error).toBeNull();
    local.arrive('b');
    expect((await b.refresh()).error).toBeNull();
  });

  it('without the ledger the same lag spends the old token, and the server revokes the session', async () => {
    const { a, b } = await twoTabs(null);
    for (let n = 0; n < 3; n++) expect((await a.refresh()).error).toBeNull();

    expect((await b.refresh()).error).toMatchObject({ code: 'refresh_token_reused', status: 401 });
    expect((await a.refresh()).error).toMatchObject({ status: 401 });
  });

  it('a sign-out in one tab reaches a lagging tab through the ledger: it refreshes nothing', async () => {
    const { spent, a, b } = await twoTabs(memoryLedger());
    expect((await a.refresh()).error).toBeNull();
    await a.clear();

    expect((await b.refresh()).error).toMatchObject({ code: 'no_session' });
    expect(b.current).toBeNull();
    expect(spent).toHaveLength(1);
  });
});
