/**
 * `client.from(table)`, `client.rpc(fn)` and `client.schema(name)`:
 * postgrest-js's builders, unmodified, over a fetch that sends the anon key
 * and the signed-in user's token (refreshed first when it is about to
 * expire). What they resolve to goes through the result rule
 * (`withClientError`): `error` gains `status`, and a request that got no
 * answer is `network_error`.
 */
import { PostgrestBuilder, PostgrestClient } from '@supabase/postgrest-js';
import { withClientError, type Fetch } from '../result.js';

declare module '@supabase/postgrest-js' {
  interface PostgrestError {
    /** The HTTP status of the answer; 0 when the request got no answer. */
    status: number;
  }
}

export interface DataClientOptions {
  restUrl: string;
  anonKey: string;
  headers: Record<string, string>;
  fetch: Fetch;
  /** The schema to use (postgrest-js sends it as `Accept-Profile`/`Content-Profile`); the server's default when absent. */
  schema?: string;
  /** The signed-in user's access token, fresh, or null. */
  accessToken(): Promise<string | null>;
}

/** A PostgrestClient whose requests carry the key and the current user's token, with retries left to the caller. */
export function dataClient<Database>(options: DataClientOptions): PostgrestClient<Database> {
  const userFetch: Fetch = async (input, init) => {
    const headers = new Headers(init?.headers);
    const token = await options.accessToken();
    if (token && !headers.has('authorization')) headers.set('authorization', `Bearer ${token}`);
    return options.fetch(input, { ...init, headers });
  };
  // A failed request is answered at once: postgrest-js would otherwise retry reads for seconds.
  return new PostgrestClient<Database>(options.restUrl, { headers: { ...options.headers, apikey: options.anonKey }, schema: options.schema as never, fetch: userFetch, retry: false });
}

/**
 * The builder with every awaited answer passed through `withClientError`.
 * Builders only gather state until awaited, so the proxy wraps `then` and
 * whatever builder a method hands back.
 */
export function settled<B extends object>(builder: B): B {
  const proxy: B = new Proxy(builder, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (key === 'then' && target instanceof PostgrestBuilder) {
        return (onFulfilled?: (v: unknown) => unknown, onRejected?: (e: unknown) => unknown) =>
          target.then(withClientError).then(onFulfilled, onRejected);
      }
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const out: unknown = value.apply(target, args);
        if (out === target) return proxy;
        return out instanceof PostgrestBuilder ? settled(out) : out;
      };
    },
  });
  return proxy;
}
