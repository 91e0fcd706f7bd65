// Talking to the console's server: the login, JSON reads, and the live stream.

export class NotLoggedIn extends Error {}

// Exchange the login token of the printed link (in the URL's fragment, which no request
// carries) for a session cookie, then take the token out of the address bar.
export async function loginFromFragment() {
  const hash = window.location.hash;
  if (!hash.startsWith("#login=")) return;
  const token = decodeURIComponent(hash.slice("#login=".length));
  history.replaceState(null, "", "/#/objects");
  const reply = await fetch("/api/session", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ token }),
    credentials: "same-origin",
  });
  if (!reply.ok) throw new NotLoggedIn("that login link is not this console's");
}

export async function getJSON(path, params = {}) {
  const query = new URLSearchParams(
    Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== ""),
  );
  const url = query.toString() ? `${path}?${query}` : path;
  const reply = await fetch(url, { credentials: "same-origin" });
  if (reply.status === 401) throw new NotLoggedIn("log in with the link the console printed");
  const body = await reply.json();
  if (!reply.ok) throw new Error(body.message || `${reply.status}`);
  return body;
}

// The live feed: `on.timeline(document)` first (and after every reconnection), then
// `on.entries(entries)` and `on.changes(changes)` as they happen; `on.status(text)`.
export function openStream(on) {
  const source = new EventSource("/api/stream");
  source.addEventListener("open", () => on.status("live"));
  source.addEventListener("error", () => on.status("reconnecting…"));
  source.addEventListener("timeline", (e) => on.timeline(JSON.parse(e.data)));
  source.addEventListener("entries", (e) => on.entries(JSON.parse(e.data).entries));
  source.addEventListener("changes", (e) => on.changes(JSON.parse(e.data).changes));
  return source;
}
