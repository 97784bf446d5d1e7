/**
 * ConnectionRoom: a connection the cluster refuses for want of room (53300)
 * makes every holder of the replica's tenant connections close its idle ones
 * before the next try; other errors pass at once; refused to the end, the
 * answer is 503 project_unavailable in the API's error shape.
 */
import { describe, expect, it } from 'vitest';
import { ApiError } from '@baseplane/contracts';
import { ConnectionRoom } from '../src/tenants/connection-room';

const full = Object.assign(new Error('sorry, too many clients already'), { code: '53300' });

/** A room with `holders` holders; each counts the times it was asked to close its idle connections. */
function roomOf(holders: number): { room: ConnectionRoom; closed: number[] } {
  const room = new ConnectionRoom();
  const closed = Array.from({ length: holders }, () => 0);
  closed.forEach((_, i) => room.add(async () => { closed[i]!++; }));
  return { room, closed };
}

describe('ConnectionRoom', () => {
  it("closes every holder's idle connections when refused, then tries again", async () => {
    const { room, closed } = roomOf(3);
    let tries = 0;
    const answer = await room.withRoom(async () => {
      tries++;
      if (tries < 3) throw full;
      return 'connected';
    });
    expect(answer).toBe('connected');
    expect(tries).toBe(3);
    expect(closed).toEqual([2, 2, 2]);
  });

  it('lets any other error pass at once, closing nothing', async () => {
    const { room, closed } = roomOf(2);
    const refused = Object.assign(new Error('password authentication failed'), { code: '28P01' });
    let tries = 0;
    await expect(room.withRoom(async () => { tries++; throw refused; })).rejects.toBe(refused);
    expect(tries).toBe(1);
    expect(closed).toEqual([0, 0]);
  });

  it('answers 503 project_unavailable when the cluster stays full', async () => {
    const { room, closed } = roomOf(1);
    let tries = 0;
    const error = await room.withRoom(async () => { tries++; throw full; }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(503);
    expect((error as ApiError).toBody()).toEqual({ code: 'project_unavailable', message: 'the project database is not reachable', details: null, hint: null });
    expect(tries).toBe(6);
    expect(closed).toEqual([5]);
  });
});
