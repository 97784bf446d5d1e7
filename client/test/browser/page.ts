/**
 * The page of the browser test (built by Vite): the client as an app would
 * make it — default storage (localStorage), default refresh — for the base
 * URL and anon key in the page's query, with every auth event it hears kept
 * in `window.app.events` for the test to read.
 */
import { createClient, type AuthEvent, type BaseplaneClient } from '../../src/index';

export interface HeardEvent {
  event: AuthEvent;
  userId: string | null;
  accessToken: string | null;
}

declare global {
  interface Window {
    app: { client: BaseplaneClient; events: HeardEvent[] };
  }
}

const query = new URLSearchParams(location.search);
const client = createClient(query.get('baseUrl')!, query.get('anonKey')!);
const events: HeardEvent[] = [];
client.auth.onAuthStateChange((event, session) => {
  events.push({ event, userId: session?.user.id ?? null, accessToken: session?.accessToken ?? null });
});
window.app = { client, events };
document.getElementById('status')!.textContent = 'ready';
